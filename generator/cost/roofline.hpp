// The roofline every estimate in kiln starts from: a piece of work takes at least its FLOPs
// over the peak of the unit it runs on and at least its bytes over the memory bandwidth.
// One launch overhead, one rule for which unit a dtype's convolutions use.
#pragma once

#include "generator/gpu/gpu_desc.hpp"
#include "runtime/dtype.hpp"

#include <optional>
#include <string_view>

namespace kiln {

// The arithmetic unit a kernel's FLOPs run on: CUDA cores (fp32) or tensor cores.
enum class Math { fp32, tf32, fp16, bf16 };
std::string_view math_name(Math m);
std::optional<Math> parse_math(std::string_view name);

// Launching a kernel, as the cost model counts it (microseconds).
inline constexpr double kLaunchUs = 2.0;

// The descriptor's peak for that unit (TFLOP/s); fp32's where the GPU lacks the unit.
double peak_tflops(const GpuDesc& g, Math m);

// The unit kiln's tensor-core kernels use for a storage type on this GPU (the implicit
// GEMM's rule), or none where they do not apply (fp32 on CUDA cores then).
std::optional<Math> tensor_core_math(DType t, int compute_capability);
// The unit a layer's convolutions and linears run on: tensor cores where kiln has them
// for the dtype, else fp32.
Math layer_math(DType t, const GpuDesc& g);

struct Roofline {
  double compute_us = 0; // FLOPs over the unit's peak
  double memory_us = 0;  // bytes over the memory bandwidth
  double floor_us() const { return compute_us > memory_us ? compute_us : memory_us; }
};
Roofline roofline(const GpuDesc& g, double flops, double bytes, Math m);

} // namespace kiln
