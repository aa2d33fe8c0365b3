#include "schedules/memory_plan.hpp"

#include <algorithm>
#include <map>
#include <numeric>

namespace kiln::sched {

int64_t peak_live_bytes(std::span<const Lifetime> buffers) {
  std::map<int, int64_t> delta; // step -> change of live bytes
  for (const Lifetime& b : buffers) {
    delta[b.first] += b.bytes;
    delta[b.last + 1] -= b.bytes;
  }
  int64_t live = 0, peak = 0;
  for (auto& [step, d] : delta) peak = std::max(peak, live += d);
  return peak;
}

MemoryPlan plan_memory(std::span<const Lifetime> buffers, int64_t alignment) {
  const size_t n = buffers.size();
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return buffers[a].bytes > buffers[b].bytes;
  });
  auto aligned = [&](int64_t v) { return (v + alignment - 1) / alignment * alignment; };

  MemoryPlan plan;
  plan.offsets.assign(n, 0);
  // The placed buffers in address order ([lo, hi), then their lifetimes): each new one scans
  // those whose lifetimes overlap its own for the tightest gap. Kept sorted as they are
  // placed, where sorting the overlapping ones per buffer made resnet1202's plan O(n^2 log n).
  struct Placed {
    int64_t lo, hi;
    int first, last;
  };
  std::vector<Placed> placed;
  for (size_t i : order) {
    const Lifetime& b = buffers[i];
    const int64_t need = aligned(b.bytes);
    int64_t best = -1, best_gap = INT64_MAX, cursor = 0;
    for (const Placed& p : placed) {
      if (p.first > b.last || b.first > p.last) continue;
      if (p.lo - cursor >= need && p.lo - cursor < best_gap)
        best = cursor, best_gap = p.lo - cursor;
      cursor = std::max(cursor, p.hi);
    }
    plan.offsets[i] = best >= 0 ? best : cursor;
    plan.arena_bytes = std::max(plan.arena_bytes, plan.offsets[i] + need);
    const Placed mine{plan.offsets[i], plan.offsets[i] + need, b.first, b.last};
    placed.insert(std::upper_bound(placed.begin(), placed.end(), mine,
                                   [](const Placed& x, const Placed& y) {
                                     return std::pair(x.lo, x.hi) < std::pair(y.lo, y.hi);
                                   }),
                  mine);
  }
  plan.peak_live_bytes = peak_live_bytes(buffers);
  return plan;
}

} // namespace kiln::sched
