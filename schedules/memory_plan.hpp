// Static memory planning: arena offsets for buffers with known lifetimes, so the runtime
// allocates once and nothing is allocated while a network runs.
//
// Greedy by size with best fit (Pisarchyk & Lee, "Efficient Memory Management for Deep
// Neural Net Inference", 2020): buffers in decreasing size; each takes the smallest gap,
// among the buffers already placed whose lifetimes overlap its own, that holds it.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace kiln::sched {

struct Lifetime {
  int64_t bytes = 0;
  int first = 0; // first step that writes it
  int last = 0;  // last step that uses it (inclusive)
};

struct MemoryPlan {
  std::vector<int64_t> offsets; // per buffer, aligned
  int64_t arena_bytes = 0;
  int64_t peak_live_bytes = 0; // the lower bound any placement needs (unaligned sizes)
};

MemoryPlan plan_memory(std::span<const Lifetime> buffers, int64_t alignment = 256);

// Peak of the sum of bytes of buffers alive at one step.
int64_t peak_live_bytes(std::span<const Lifetime> buffers);

} // namespace kiln::sched
