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
  std::vector<size_t> placed;
  std::vector<std::pair<int64_t, int64_t>> busy; // [begin, end) of overlapping placed buffers
  for (size_t i : order) {
    const Lifetime& b = buffers[i];
    busy.clear();
    for (size_t j : placed)
      if (buffers[j].first <= b.last && b.first <= buffers[j].last)
        busy.push_back({plan.offsets[j], plan.offsets[j] + aligned(buffers[j].bytes)});
    std::sort(busy.begin(), busy.end());
    const int64_t need = aligned(b.bytes);
    int64_t best = -1, best_gap = INT64_MAX, cursor = 0;
    for (auto [lo, hi] : busy) {
      if (lo - cursor >= need && lo - cursor < best_gap) best = cursor, best_gap = lo - cursor;
      cursor = std::max(cursor, hi);
    }
    plan.offsets[i] = best >= 0 ? best : cursor;
    plan.arena_bytes = std::max(plan.arena_bytes, plan.offsets[i] + need);
    placed.push_back(i);
  }
  plan.peak_live_bytes = peak_live_bytes(buffers);
  return plan;
}

} // namespace kiln::sched
