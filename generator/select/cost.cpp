#include "generator/select/cost.hpp"

#include <algorithm>
#include <cmath>

namespace kiln {

double peak_tflops(const GpuDesc& g, const std::string& math) {
  const PeakTflops& p = g.peak_tflops;
  double t = p.fp32;
  if (math == "tf32") t = p.tf32;
  if (math == "fp16") t = p.fp16;
  if (math == "bf16") t = p.bf16;
  return t > 0 ? t : p.fp32;
}

CostEstimate estimate_cost(const GpuDesc& g, const Variant& v) {
  CostEstimate c;
  c.occ = occupancy(g, v.threads(), v.registers_per_thread, v.static_smem + v.dynamic_smem);
  const double compute = v.flops / (peak_tflops(g, v.math) * 1e6); // microseconds
  const double memory = v.bytes / (g.memory_bandwidth_gbps * 1e3);
  c.floor_micros = std::max(compute, memory);
  if (c.occ.blocks_per_sm == 0) {
    c.micros = INFINITY;
    return c;
  }
  const double slots = double(c.occ.blocks_per_sm) * double(g.sm_count);
  const double waves = std::ceil(double(v.blocks()) / slots);
  c.fill = double(v.blocks()) / (waves * slots);
  // Latency hiding needs resident warps; below a quarter of the SM's warps it suffers.
  const double hiding = std::min(1.0, 0.25 + c.occ.warps_fraction * 1.5);
  c.micros = c.floor_micros / (v.efficiency * hiding * c.fill) + 2.0;
  return c;
}

} // namespace kiln
