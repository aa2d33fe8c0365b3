// What a tensor-core family tells the cost model about its main loop, and the ceilings the
// model derives from it (DESIGN.md 5.1, "ceilings"). The roofline alone cannot tell a 64x32
// block tile from a 128x128 one: both do the same FLOPs and read about the same bytes, but
// the small tile moves three times the shared-memory bytes and issues three times the
// instructions per MMA, which caps it far below the tensor peak however full the SM is.
//
// The interface is deliberately small: a family describes one warp's main loop per MMA
// instruction; the model turns that into fractions of the math peak, one per limit, using
// only the GPU descriptor's rates. A new family (wgmma, say) fills the same struct.
#pragma once

#include "generator/cost/roofline.hpp"
#include "generator/gpu/gpu_desc.hpp"

#include <string>

namespace kiln {

struct MainLoop {
  // FLOPs of one warp-level MMA instruction (mma.sync m16n8k16: 4096). 0: the variant has
  // no main loop described, and only the roofline, its efficiency and occupancy price it.
  double mma_flops = 0;
  // The fraction of the unit's peak this MMA instruction can reach at all (the descriptor's
  // peak is the GPU's best instruction's: on Hopper, wgmma's). 1 unless measured otherwise.
  double peak_fraction = 1;
  // Bytes through shared memory per MMA: the stores that fill the operand tiles and the loads
  // that bring them into fragments (ldmatrix or LDS), over all warps of the block.
  double smem_bytes_per_mma = 0;
  // Warp instructions issued per MMA in the main loop, the MMAs themselves included.
  double issue_per_mma = 0;
  // Latency hiding. A warp's main loop is a sequence of steps: `mmas_per_step` MMAs
  // (and what issues with them), then `exposed_clocks_per_step` cycles it waits that its
  // own work does not cover (operands loaded before the first MMA that uses them, barriers).
  double mmas_per_step = 1;
  double exposed_clocks_per_step = 0;
  // SM clocks per MMA that the MMA issue waits in series beyond the loop's throughput
  // limits, measured, not static: a Hopper tile's time per swizzle row of k and its epilogue
  // spread over its MMAs (families/hopper/wgmma_loop.hpp). They add to the math limit in the
  // price and stay out of the static ceilings (CostEstimate::serial_micros).
  double serial_clocks_per_mma = 0;
  // Bytes a block keeps in flight from global memory (the pipeline's stages ahead), and the
  // bytes it loads per MMA: the in-flight bytes must cover the global latency at its rate.
  double global_bytes_in_flight_per_block = 0;
  double global_bytes_per_mma = 0;
  // Bytes the SM requests from L2 per MMA: global_bytes_per_mma unless a cluster's multicast
  // brings a tile once for several SMs (< 0: the same as global_bytes_per_mma).
  double l2_bytes_per_mma = -1;
  double l2_bytes() const {
    return l2_bytes_per_mma >= 0 ? l2_bytes_per_mma : global_bytes_per_mma;
  }
};

// Each limit as the fraction of the math peak it allows a variant at its occupancy (1: it
// does not limit). The static ceiling is the smallest; `limiter` names it.
struct Ceilings {
  double math = 1;    // the MMA instruction's share of the unit's peak (peak_fraction)
  double dram = 1;    // compute floor over DRAM floor
  double smem = 1;    // shared-memory bandwidth per SM
  double issue = 1;   // instruction issue per SM
  double l2 = 1;      // the L2 cache's bandwidth to the SMs (GpuDesc::l2_bytes_per_clock)
  double latency = 1; // latency hiding by the resident warps at full occupancy
  double ceiling() const;
  std::string limiter() const; // "math", "dram", "l2", "smem", "issue" or "latency"
};

// Cycles the model assumes for global memory latency (an L2 hit under load, about half a
// DRAM access): what the pipeline's bytes in flight must cover.
inline constexpr double kGlobalLatencyClocks = 600;
// A DRAM access under load: what a streaming kernel's bytes in flight must cover.
inline constexpr double kDramLatencyClocks = 2 * kGlobalLatencyClocks;
// The share of a main-loop variant's time its loop's ceilings do not see (the prologue, the
// pipeline's fill and drain, the epilogue): the efficiency a tensor-core family multiplies by
// its tiles' utilisation. Stated, not measured: the mma.sync family's and the Hopper weight
// gradient's (the Hopper conv forward's efficiency is measured: families/hopper/wgmma_loop.hpp).
inline constexpr double kOutsideLoopEfficiency = 0.8;
// Scheduler sub-partitions per SM (Volta to Hopper): a warp has a quarter of the SM's issue
// and tensor throughput.
inline constexpr double kSubPartitions = 4;

// SM clocks per MMA at each throughput limit, for a loop on this GPU at this unit's peak.
// The unit's rate per clock is the architecture's (gpu/detect.hpp: 4096 fp16 FLOP per clock
// per SM on Hopper), not the descriptor's peak over its clock: vendors quote the tensor peak
// at a lower clock than the boost clock the descriptor gives (the H100's 989.4 TFLOP/s is
// 132 SMs x 4096 x 1830 MHz, its clock_mhz 1980), and the ceilings are ratios of rates at
// one clock. `peak` is the unit at its full rate; `math` at the MMA's peak_fraction.
struct LoopClocks {
  double peak = 0, math = 0, smem = 0, issue = 0, l2 = 0;
  double serial = 0;      // MainLoop::serial_clocks_per_mma, in series with `math`
  double binding() const; // the largest (math with serial): one MMA's cost at steady state
};
LoopClocks loop_clocks(const GpuDesc& g, Math math, const MainLoop& l);

// How well `resident_warps` warps (in `resident_blocks` blocks) on one SM hide the loop's
// latencies, 0..1: enough warps each with enough independent work, and enough bytes in flight.
double loop_latency_hiding(const GpuDesc& g, Math math, const MainLoop& l, double resident_blocks,
                           double resident_warps);

} // namespace kiln
