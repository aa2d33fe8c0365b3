#include "generator/gpu/detect.hpp"

#include "runtime/error.hpp"

#include <cuda_runtime_api.h>

namespace kiln {

namespace {

int attr(cudaDeviceAttr a, int device) {
  int v = 0;
  if (cudaDeviceGetAttribute(&v, a, device) != cudaSuccess) return 0;
  return v;
}

} // namespace

PeakTflops estimate_peaks(int cc, int64_t sm_count, double clock_mhz) {
  // Dense flops per SM per clock: FP32 CUDA cores x 2, tensor-core FMAs x 2.
  double fp32 = 128, fp16 = 0, tf32 = 0, bf16 = 0;
  if (cc >= 70) fp16 = 1024;
  if (cc >= 80) fp16 = 2048, tf32 = 1024, bf16 = 2048;
  if (cc == 86 || cc == 87 || cc == 89) fp32 = 256, fp16 = 1024, tf32 = 512, bf16 = 1024;
  if (cc >= 90) fp32 = 256, fp16 = 4096, tf32 = 2048, bf16 = 4096;
  const double scale = double(sm_count) * clock_mhz * 1e6 / 1e12;
  return {fp32 * scale, tf32 * scale, fp16 * scale, bf16 * scale};
}

GpuDesc detect_gpu(int device) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e == cudaErrorInsufficientDriver || e == cudaErrorNoDevice || e == cudaErrorInitializationError)
    cudaGetLastError();
  if (e == cudaErrorInsufficientDriver)
    throw Error("", "gpu detect",
                "no usable CUDA driver: libcuda.so.1 is missing or older than this CUDA runtime "
                "(cudaErrorInsufficientDriver); install the NVIDIA driver, or pick a shipped "
                "descriptor with --gpu (see `kiln gpu list`)");
  if (e == cudaErrorNoDevice || (e == cudaSuccess && count == 0))
    throw Error("", "gpu detect",
                "the CUDA driver is present but reports no GPU (cudaErrorNoDevice); pick a "
                "shipped descriptor with --gpu (see `kiln gpu list`)");
  if (e != cudaSuccess)
    throw Error("", "gpu detect", cat("the CUDA runtime failed: ", cudaGetErrorName(e), ": ",
                                      cudaGetErrorString(e)));
  if (device < 0 || device >= count)
    throw Error("", "gpu detect", cat("no device ", device, " (", count, " present)"));
  cudaDeviceProp p{};
  e = cudaGetDeviceProperties(&p, device);
  if (e != cudaSuccess)
    throw Error("", "gpu detect", cat("cudaGetDeviceProperties: ", cudaGetErrorString(e)));
  GpuDesc g;
  g.name = p.name;
  g.arch = cat("sm_", p.major, p.minor);
  g.sm_count = p.multiProcessorCount;
  g.warp_size = p.warpSize;
  g.max_threads_per_block = p.maxThreadsPerBlock;
  g.max_threads_per_sm = p.maxThreadsPerMultiProcessor;
  g.max_blocks_per_sm = attr(cudaDevAttrMaxBlocksPerMultiprocessor, device);
  g.registers_per_sm = p.regsPerMultiprocessor;
  g.registers_per_block = p.regsPerBlock;
  g.shared_memory_per_sm = int64_t(p.sharedMemPerMultiprocessor);
  g.shared_memory_per_block = int64_t(p.sharedMemPerBlock);
  g.shared_memory_per_block_optin = int64_t(p.sharedMemPerBlockOptin);
  g.shared_memory_reserved_per_block = attr(cudaDevAttrReservedSharedMemoryPerBlock, device);
  g.l2_bytes = p.l2CacheSize;
  g.memory_bytes = int64_t(p.totalGlobalMem);
  const double mem_khz = attr(cudaDevAttrMemoryClockRate, device);
  const double bus_bits = attr(cudaDevAttrGlobalMemoryBusWidth, device);
  g.memory_bandwidth_gbps = 2.0 * mem_khz * 1e3 * (bus_bits / 8) / 1e9; // double data rate
  g.clock_mhz = attr(cudaDevAttrClockRate, device) / 1000.0;
  g.peak_tflops = estimate_peaks(p.major * 10 + p.minor, g.sm_count, g.clock_mhz);
  // Not device attributes: Turing's shared memory moves 64 bytes per clock per SM, Volta,
  // Ampere, Ada and Hopper's 128; four schedulers each issue one warp instruction a clock.
  g.shared_memory_bytes_per_clock = p.major * 10 + p.minor == 75 ? 64 : 128;
  g.issue_slots_per_clock = 4;
  // No l2_bytes_per_clock: the L2 ceiling it sets chose plans an H100 ran slower (gpu_desc.hpp).
  g.source = cat("kiln gpu detect (CUDA runtime ", CUDART_VERSION,
                 "); peak_tflops estimated from SM count, clock and per-SM rates; shared memory "
                 "bandwidth and issue rate per SM from the architecture");
  return g;
}

GpuDesc gpu_for_device(const std::string& gpu, const std::string& device) {
  if (gpu != "auto") return load_gpu(gpu);
  return device == "gpu" ? detect_gpu() : load_gpu("h200");
}

} // namespace kiln
