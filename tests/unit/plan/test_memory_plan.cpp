#include "runtime/param_init.hpp"
#include "schedules/memory_plan.hpp"

#include <doctest/doctest.h>

using namespace kiln;

TEST_CASE("best-fit placement never overlaps two buffers alive at once") {
  uint64_t rng = 42;
  for (int trial = 0; trial < 200; ++trial) {
    const int n = 1 + int(splitmix64(rng) % 40);
    std::vector<sched::Lifetime> bufs;
    for (int i = 0; i < n; ++i) {
      const int a = int(splitmix64(rng) % 50), len = int(splitmix64(rng) % 20);
      bufs.push_back({int64_t(1 + splitmix64(rng) % 5000), a, a + len});
    }
    const sched::MemoryPlan mp = sched::plan_memory(bufs, 256);
    CHECK(mp.arena_bytes >= mp.peak_live_bytes);
    for (int i = 0; i < n; ++i) {
      CHECK(mp.offsets[i] % 256 == 0);
      CHECK(mp.offsets[i] + bufs[i].bytes <= mp.arena_bytes);
      for (int j = i + 1; j < n; ++j) {
        const bool alive_together = bufs[i].first <= bufs[j].last && bufs[j].first <= bufs[i].last;
        const bool share_bytes = mp.offsets[i] < mp.offsets[j] + bufs[j].bytes &&
                                 mp.offsets[j] < mp.offsets[i] + bufs[i].bytes;
        CHECK_FALSE((alive_together && share_bytes));
      }
    }
  }
}

TEST_CASE("a chain of buffers reuses memory") {
  // Each buffer lives for two steps: the arena needs two buffers, not ten.
  std::vector<sched::Lifetime> bufs;
  for (int i = 0; i < 10; ++i) bufs.push_back({1024, i, i + 1});
  const sched::MemoryPlan mp = sched::plan_memory(bufs, 256);
  CHECK(mp.peak_live_bytes == 2048);
  CHECK(mp.arena_bytes == 2048);
}
