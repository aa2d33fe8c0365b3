// What one kernel launch costs: the largest of its floors (the roofline's math and DRAM
// floors, and for a family that describes its main loop the shared-memory and issue floors
// of that loop, cost/main_loop.hpp), scaled by the efficiency its family reaches beyond what
// the model sees, stretched by latency hiding at its occupancy and by the last wave, plus the
// launch overhead. Selection compares variants by it.
#pragma once

#include "generator/cost/main_loop.hpp"
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
  MainLoop loop;            // mma_flops 0: none described
  // A streaming kernel's global loads a thread issues before it waits on them, in bytes: its
  // latency hiding by Little's law over the DRAM latency. 0: not described (then resident
  // warps judge it).
  double stream_bytes_in_flight = 0;
};

struct CostEstimate {
  double micros = 0;       // estimated time
  double floor_micros = 0; // the largest floor: math (with serial), DRAM, shared memory, issue
  double serial_micros = 0; // of the math floor, the loop's measured serial clocks
  Occupancy occ;
  double fill = 0;   // fraction of SM block slots the grid keeps busy over its waves
  Ceilings ceilings; // each limit as a fraction of the math peak, at full occupancy
};

CostEstimate estimate_kernel(const GpuDesc& g, const KernelWork& w);

} // namespace kiln
