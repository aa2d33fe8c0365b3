// kiln-gpu/1 (DESIGN.md 4.2): what kiln knows of a GPU when it selects and sizes kernels.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

inline constexpr std::string_view kGpuFormat = "kiln-gpu/1";

struct PeakTflops {
  double fp32 = 0, tf32 = 0, fp16 = 0, bf16 = 0; // dense; 0 where the GPU lacks the unit
};

struct GpuDesc {
  std::string name;
  std::string arch; // "sm_90"
  int64_t sm_count = 0;
  int64_t warp_size = 32;
  int64_t max_threads_per_block = 0;
  int64_t max_threads_per_sm = 0;
  int64_t max_blocks_per_sm = 0;
  int64_t registers_per_sm = 0;
  int64_t registers_per_block = 0;
  int64_t shared_memory_per_sm = 0;
  int64_t shared_memory_per_block = 0;
  int64_t shared_memory_per_block_optin = 0;
  int64_t shared_memory_reserved_per_block = 0;
  int64_t l2_bytes = 0;
  int64_t memory_bytes = 0;
  double memory_bandwidth_gbps = 0;
  double clock_mhz = 0;
  // Per SM and clock: shared-memory bandwidth (bytes) and warp instructions issued (one per
  // scheduler). The cost model's shared-memory and issue ceilings (cost/main_loop.hpp).
  int64_t shared_memory_bytes_per_clock = 0;
  int64_t issue_slots_per_clock = 0;
  // Per SM and clock: bytes the L2 cache delivers to the SMs when all of them load (optional;
  // 0: unknown, no L2 ceiling). The cost model's L2 ceiling (cost/main_loop.hpp). Neither
  // the shipped descriptors nor `kiln gpu detect` set it: with 32 on the H100 it chose
  // resnet50 plans that ran slower than those chosen without it (bench/results/h100_2026-11-27).
  int64_t l2_bytes_per_clock = 0;
  PeakTflops peak_tflops;
  std::string source; // where the numbers come from

  int compute_capability() const; // 90 for sm_90 / sm_90a
  // "NVIDIA H200@1a2b3c4d": the name and a hash of the canonical descriptor; carried by
  // every cache key and results file.
  std::string identity() const;
};

GpuDesc parse_gpu(std::string_view text, const std::string& file);
nlohmann::ordered_json gpu_to_json(const GpuDesc& g);

// A path to a descriptor file, or the name of a shipped one ("h200", "a100", ...).
GpuDesc load_gpu(const std::string& path_or_name);

struct ShippedGpu {
  std::string id; // file stem: "h200"
  GpuDesc desc;
};
std::vector<ShippedGpu> shipped_gpus();

} // namespace kiln
