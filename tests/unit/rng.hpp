// The seeded generator of the random schedule and tiling problems: splitmix64, so a seed
// gives the same problems on every platform and standard library.
#pragma once

#include <cstdint>

namespace kiln::sched::testing {

struct Rng {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  int64_t uniform(int64_t lo, int64_t hi) { return lo + int64_t(next() % uint64_t(hi - lo + 1)); }
  bool chance(int percent) { return uniform(1, 100) <= percent; }
};

} // namespace kiln::sched::testing
