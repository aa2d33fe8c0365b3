#include "generator/check/image_sample.hpp"

#include "runtime/ops/registry.hpp"
#include "runtime/param_init.hpp"

#include <algorithm>
#include <cstring>

namespace kiln {

namespace {

bool listed(std::span<const std::string_view> roles, std::string_view role) {
  return std::find(roles.begin(), roles.end(), role) != roles.end();
}

} // namespace

bool per_image_role(Fn fn, std::string_view role) { return listed(fn_def(fn).per_image, role); }

SampledImages sampled_images(const Plan& p, const Step& s, int64_t most, uint64_t seed) {
  const FnDef& def = fn_def(s.fn);
  if (most <= 0 || def.per_image.empty()) return {};
  int64_t batch = -1;
  for (const Arg& a : s.args) {
    if (listed(def.shared, a.role)) continue;
    if (!listed(def.per_image, a.role)) return {}; // a role that spans images
    const Shape& shape = p.buffers[size_t(a.buffer)].shape;
    if (shape.empty() || (batch >= 0 && shape[0] != batch)) return {};
    batch = shape[0];
  }
  if (batch <= most) return {};
  std::vector<int64_t> picked = {0, 1, batch - 1};
  uint64_t st = seed ^ 0x1a9e5;
  // Others drawn from the rest; at most `most`, however small.
  while (int64_t(picked.size()) < std::min<int64_t>(most, batch)) {
    const int64_t n = 2 + int64_t(splitmix64(st) % uint64_t(batch - 3));
    if (std::find(picked.begin(), picked.end(), n) == picked.end()) picked.push_back(n);
  }
  picked.resize(size_t(std::min<int64_t>(most, int64_t(picked.size()))));
  std::sort(picked.begin(), picked.end());
  return {picked, batch};
}

Tensor images_of(const Tensor& t, std::span<const int64_t> images) {
  Shape shape = t.shape();
  const size_t per = t.nbytes() / size_t(shape[0]);
  shape[0] = int64_t(images.size());
  Tensor out(t.dtype(), shape);
  for (size_t i = 0; i < images.size(); ++i)
    std::memcpy(out.bytes() + i * per, t.bytes() + size_t(images[i]) * per, per);
  return out;
}

} // namespace kiln
