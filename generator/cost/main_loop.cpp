#include "generator/cost/main_loop.hpp"

#include "generator/gpu/detect.hpp"

#include <algorithm>

namespace kiln {

double Ceilings::ceiling() const { return std::min({math, dram, l2, smem, issue, latency}); }

std::string Ceilings::limiter() const {
  const double c = ceiling();
  // Ties go to the first: the math floor is the one to reach.
  if (math <= c) return "math";
  if (dram <= c) return "dram";
  if (l2 <= c) return "l2";
  if (smem <= c) return "smem";
  if (issue <= c) return "issue";
  return "latency";
}

double LoopClocks::binding() const { return std::max({math + serial, smem, issue, l2}); }

LoopClocks loop_clocks(const GpuDesc& g, Math math, const MainLoop& l) {
  const PeakTflops per_clock = estimate_peaks(g.compute_capability(), 1, 1e6); // per SM
  double rate = math == Math::fp16   ? per_clock.fp16
                : math == Math::bf16 ? per_clock.bf16
                : math == Math::tf32 ? per_clock.tf32
                                     : per_clock.fp32;
  if (rate <= 0) // an architecture the table does not know the unit on: the descriptor's
    rate = peak_tflops(g, math) * 1e12 / (double(g.sm_count) * g.clock_mhz * 1e6);
  LoopClocks c;
  c.peak = l.mma_flops / rate;
  c.math = c.peak / l.peak_fraction;
  c.serial = l.serial_clocks_per_mma;
  c.smem = l.smem_bytes_per_mma / double(g.shared_memory_bytes_per_clock);
  c.issue = l.issue_per_mma / double(g.issue_slots_per_clock);
  // Every SM loading at once shares L2's bandwidth: its bytes per MMA at the SM's share.
  if (g.l2_bytes_per_clock > 0) c.l2 = l.l2_bytes() / double(g.l2_bytes_per_clock);
  return c;
}

double loop_latency_hiding(const GpuDesc& g, Math math, const MainLoop& l, double resident_blocks,
                           double resident_warps) {
  const double per_mma = loop_clocks(g, math, l).binding();
  if (per_mma <= 0) return 1;
  // A warp runs on one sub-partition, at a quarter of the SM's rate: a step's work takes it
  // W cycles, then it waits L. With w warps per sub-partition the unit is busy w W / (W + L).
  const double work = l.mmas_per_step * per_mma * kSubPartitions;
  const double w = resident_warps / kSubPartitions;
  const double warps = work > 0 ? w * work / (work + l.exposed_clocks_per_step) : 1;
  // Little's law for the loads: the rate the SM consumes bytes times the latency.
  const double needed = l.global_bytes_per_mma / per_mma * kGlobalLatencyClocks;
  const double in_flight = resident_blocks * l.global_bytes_in_flight_per_block;
  const double loads = needed > 0 ? in_flight / needed : 1;
  return std::clamp(std::min(warps, loads), 0.0, 1.0);
}

} // namespace kiln
