#include "runtime/param_init.hpp"

namespace kiln {

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t fnv1a(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

Tensor init_param(const Plan& plan, const ParamBinding& p, uint64_t seed) {
  const Buffer& b = plan.buffers[p.buffer];
  Tensor t(b.dtype, b.shape);
  uint64_t state = seed ^ fnv1a(p.name);
  const int64_t n = t.numel();
  for (int64_t i = 0; i < n; ++i) {
    const double u = double(splitmix64(state) >> 11) * 0x1.0p-53; // [0, 1)
    t.set(i, p.init_lo + (p.init_hi - p.init_lo) * u);
  }
  return t;
}

} // namespace kiln
