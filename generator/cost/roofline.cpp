#include "generator/cost/roofline.hpp"

namespace kiln {

std::string_view math_name(Math m) {
  switch (m) {
  case Math::fp32: return "fp32";
  case Math::tf32: return "tf32";
  case Math::fp16: return "fp16";
  case Math::bf16: return "bf16";
  }
  return "?";
}

std::optional<Math> parse_math(std::string_view name) {
  for (Math m : {Math::fp32, Math::tf32, Math::fp16, Math::bf16})
    if (math_name(m) == name) return m;
  return std::nullopt;
}

double peak_tflops(const GpuDesc& g, Math m) {
  const PeakTflops& p = g.peak_tflops;
  const double t = m == Math::tf32   ? p.tf32
                   : m == Math::fp16 ? p.fp16
                   : m == Math::bf16 ? p.bf16
                                     : p.fp32;
  return t > 0 ? t : p.fp32;
}

std::optional<Math> tensor_core_math(DType t, int cc) {
  if (t == DType::f16 && cc >= 75) return Math::fp16;
  if (t == DType::bf16 && cc >= 80) return Math::bf16;
  if (t == DType::f32 && cc >= 80) return Math::tf32;
  return std::nullopt;
}

Math layer_math(DType t, const GpuDesc& g) {
  return tensor_core_math(t, g.compute_capability()).value_or(Math::fp32);
}

Roofline roofline(const GpuDesc& g, double flops, double bytes, Math m) {
  return {flops / (peak_tflops(g, m) * 1e6), bytes / (g.memory_bandwidth_gbps * 1e3)};
}

} // namespace kiln
