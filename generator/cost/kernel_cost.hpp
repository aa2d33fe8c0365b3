// What one kernel launch costs: its roofline floor (cost/roofline.hpp) scaled by the
// efficiency its family reaches when occupancy is good, by how well its blocks fill the GPU
// (occupancy and the last wave), plus the launch overhead. Selection compares variants by it.
#pragma once

#include "generator/cost/roofline.hpp"
#include "generator/gpu/gpu_desc.hpp"
#include "generator/gpu/occupancy.hpp"

#include <cstdint>

namespace kiln {

// A launch as the cost model sees it: its work and what limits its residency.
struct KernelWork {
  double flops = 0, bytes = 0;
  Math math = Math::fp32;
  double efficiency = 0.5; // the fraction of the floor's rate the family reaches
  int64_t threads = 1, blocks = 1;
  int registers_per_thread = 32;
  int64_t shared_bytes = 0; // per block, static and dynamic
};

struct CostEstimate {
  double micros = 0;       // estimated time
  double floor_micros = 0; // the roofline floor
  Occupancy occ;
  double fill = 0; // fraction of SM block slots the grid keeps busy over its waves
};

CostEstimate estimate_kernel(const GpuDesc& g, const KernelWork& w);

} // namespace kiln
