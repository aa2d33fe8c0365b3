#include "generator/cost/kernel_cost.hpp"

#include <algorithm>
#include <cmath>

namespace kiln {

CostEstimate estimate_kernel(const GpuDesc& g, const KernelWork& w) {
  CostEstimate c;
  c.occ = occupancy(g, w.threads, w.registers_per_thread, w.shared_bytes);
  const Roofline r = roofline(g, w.flops, w.bytes, w.math);
  const bool loop = w.loop.mma_flops > 0;
  double math_us = r.compute_us, smem_us = 0, issue_us = 0, l2_us = 0, serial_us = 0;
  if (loop) { // the loop's limits in time, from its clocks per MMA at each (main_loop.hpp)
    const LoopClocks k = loop_clocks(g, w.math, w.loop);
    math_us = r.compute_us * k.math / k.peak;
    smem_us = r.compute_us * k.smem / k.peak;
    issue_us = r.compute_us * k.issue / k.peak;
    l2_us = r.compute_us * k.l2 / k.peak;
    serial_us = r.compute_us * k.serial / k.peak;
  }
  // The measured serial clocks add to the math floor; the ceilings below stay static.
  c.floor_micros = std::max({math_us + serial_us, r.memory_us, smem_us, issue_us, l2_us});
  c.serial_micros = serial_us;
  const auto share = [&](double us) { return us > 0 ? std::min(1.0, r.compute_us / us) : 1.0; };
  c.ceilings.math = share(math_us);
  c.ceilings.dram = share(r.memory_us);
  c.ceilings.smem = share(smem_us);
  c.ceilings.issue = share(issue_us);
  c.ceilings.l2 = share(l2_us);
  if (c.occ.blocks_per_sm == 0) {
    c.ceilings.latency = 0;
    c.micros = INFINITY;
    return c;
  }
  // Blocks run in waves of blocks_per_sm per SM; a last partial wave spreads its blocks over
  // the SMs first, so a lone block has a whole SM (not one resident slot's share of it),
  // though with fewer resident warps to hide latency. A described main loop hides latency
  // by its warps' independent work and its bytes in flight (cost/main_loop.hpp); otherwise
  // latency hiding needs resident warps, and below a quarter of the SM's warps it suffers.
  const double bps = c.occ.blocks_per_sm, sms = double(g.sm_count), blocks = double(w.blocks);
  const double warps_per_block = std::ceil(double(w.threads) / double(g.warp_size));
  // A streaming kernel that states its loads in flight: Little's law, those of the resident
  // threads against the SM's share of the DRAM bandwidth over the DRAM latency.
  const double dram_bytes_per_clock =
      g.memory_bandwidth_gbps * 1e3 / g.clock_mhz / double(g.sm_count);
  const auto hiding = [&](double resident) {
    if (loop)
      return std::max(1e-3,
                      loop_latency_hiding(g, w.math, w.loop, resident, resident * warps_per_block));
    if (w.stream_bytes_in_flight > 0 && dram_bytes_per_clock > 0 &&
        std::isfinite(dram_bytes_per_clock))
      return std::clamp(resident * double(w.threads) * w.stream_bytes_in_flight /
                            (dram_bytes_per_clock * kDramLatencyClocks),
                        1e-3, 1.0);
    return std::min(1.0, 0.25 + c.occ.warps_fraction * resident / bps * 1.5);
  };
  c.ceilings.latency = hiding(bps);
  const double full = std::floor(blocks / (bps * sms)), rest = blocks - full * bps * sms;
  const double last = std::ceil(rest / sms); // blocks per SM in the partial wave
  // Time in units of one block's work at a whole SM's rate, and the SM-block slots it keeps.
  const double units = full * bps / hiding(bps) + (rest > 0 ? last / hiding(last) : 0);
  c.fill = blocks / (sms * (full * bps + last));
  c.micros = c.floor_micros * sms / blocks * units / w.efficiency + kLaunchUs;
  return c;
}

} // namespace kiln
