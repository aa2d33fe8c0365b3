// How many blocks of a kernel fit on one SM (the CUDA occupancy calculation from the
// descriptor's limits), and what limits it.
#pragma once

#include "generator/gpu/gpu_desc.hpp"

#include <string>

namespace kiln {

struct Occupancy {
  int blocks_per_sm = 0;    // 0: the kernel cannot run on this GPU
  double warps_fraction = 0; // resident warps / max warps per SM
  std::string limiter;      // "threads", "registers", "shared memory", "blocks"
};

Occupancy occupancy(const GpuDesc& g, int64_t threads_per_block, int registers_per_thread,
                    int64_t shared_bytes_per_block);

} // namespace kiln
