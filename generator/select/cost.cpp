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
  // Blocks run in waves of blocks_per_sm per SM; a last partial wave spreads its blocks over
  // the SMs first, so a lone block has a whole SM (not one resident slot's share of it),
  // though with fewer resident warps to hide latency. Latency hiding needs resident warps;
  // below a quarter of the SM's warps it suffers.
  const double bps = c.occ.blocks_per_sm, sms = double(g.sm_count), blocks = double(v.blocks());
  const auto hiding = [&](double resident) {
    return std::min(1.0, 0.25 + c.occ.warps_fraction * resident / bps * 1.5);
  };
  const double full = std::floor(blocks / (bps * sms)), rest = blocks - full * bps * sms;
  const double last = std::ceil(rest / sms); // blocks per SM in the partial wave
  // Time in units of one block's work at a whole SM's rate, and the SM-block slots it keeps.
  const double units = full * bps / hiding(bps) + (rest > 0 ? last / hiding(last) : 0);
  c.fill = blocks / (sms * (full * bps + last));
  c.micros = c.floor_micros * sms / blocks * units / v.efficiency + 2.0;
  return c;
}

} // namespace kiln
