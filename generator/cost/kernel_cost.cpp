#include "generator/cost/kernel_cost.hpp"

#include <algorithm>
#include <cmath>

namespace kiln {

CostEstimate estimate_kernel(const GpuDesc& g, const KernelWork& w) {
  CostEstimate c;
  c.occ = occupancy(g, w.threads, w.registers_per_thread, w.shared_bytes);
  c.floor_micros = roofline(g, w.flops, w.bytes, w.math).floor_us();
  if (c.occ.blocks_per_sm == 0) {
    c.micros = INFINITY;
    return c;
  }
  // Blocks run in waves of blocks_per_sm per SM; a last partial wave spreads its blocks over
  // the SMs first, so a lone block has a whole SM (not one resident slot's share of it),
  // though with fewer resident warps to hide latency. Latency hiding needs resident warps;
  // below a quarter of the SM's warps it suffers.
  const double bps = c.occ.blocks_per_sm, sms = double(g.sm_count), blocks = double(w.blocks);
  const auto hiding = [&](double resident) {
    return std::min(1.0, 0.25 + c.occ.warps_fraction * resident / bps * 1.5);
  };
  const double full = std::floor(blocks / (bps * sms)), rest = blocks - full * bps * sms;
  const double last = std::ceil(rest / sms); // blocks per SM in the partial wave
  // Time in units of one block's work at a whole SM's rate, and the SM-block slots it keeps.
  const double units = full * bps / hiding(bps) + (rest > 0 ? last / hiding(last) : 0);
  c.fill = blocks / (sms * (full * bps + last));
  c.micros = c.floor_micros * sms / blocks * units / w.efficiency + kLaunchUs;
  return c;
}

} // namespace kiln
