// Launch-geometry helpers shared by families.
#pragma once

#include "generator/gpu/gpu_desc.hpp"

#include <algorithm>
#include <cstdint>

namespace kiln {

// Blocks for a grid-stride loop over `count` items: enough to fill every SM once at full
// occupancy, never more than the items need.
inline int64_t grid_stride_blocks(const GpuDesc& g, int64_t count, int64_t threads) {
  const int64_t needed = (count + threads - 1) / threads;
  const int64_t fill = g.sm_count * std::max<int64_t>(1, g.max_threads_per_sm / threads);
  return std::max<int64_t>(1, std::min(needed, fill));
}

} // namespace kiln
