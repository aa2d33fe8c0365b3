#include "generator/rewrite/batchnorm_relu_backward.hpp"

#include "generator/lower/plan_builder.hpp"
#include "generator/rewrite/readers.hpp"
#include "runtime/ops/registry.hpp"

#include <algorithm>

namespace kiln {

namespace {

// The readers of dx, step i's output, if they are a chunked batchnorm.backward and its
// batchnorm.partials, both after i in this phase and reading dx as their dy alone:
// (partials, backward); else none.
// `uses`: buffer_uses of the plan (which phase a buffer is named in does not change as this
// rewrite removes steps).
std::optional<std::pair<size_t, size_t>>
batchnorm_readers(const Plan& p, const std::vector<std::vector<Use>>& uses,
                  const std::vector<Step>& steps, size_t ph, size_t i, int dx) {
  if (held_beyond_steps(p, dx) || is_persistent(p.buffers[size_t(dx)].role)) return std::nullopt;
  for (const Use& u : uses[size_t(dx)])
    if (u.phase != ph) return std::nullopt; // read in another phase too
  const std::vector<size_t> r = readers(p, steps, dx, i);
  if (r.size() != 2) return std::nullopt;
  size_t part = SIZE_MAX, bw = SIZE_MAX;
  for (size_t k : r) {
    if (k == SIZE_MAX || k <= i) return std::nullopt;
    const Step& s = steps[k];
    if (s.kind == StepKind::free || s.arg("relu_y") >= 0 || s.need("dy") != dx) return std::nullopt;
    for (const Arg& a : s.args)
      if (a.buffer == dx && a.role != "dy") return std::nullopt;
    if (s.fn == Fn::batchnorm_partials) part = k;
    if (s.fn == Fn::batchnorm_backward && s.arg("partial") >= 0 && s.arg("mean") < 0) bw = k;
  }
  if (part == SIZE_MAX || bw == SIZE_MAX ||
      steps[part].need("partial") != steps[bw].need("partial"))
    return std::nullopt;
  return std::pair{part, bw};
}

} // namespace

std::vector<std::string> fuse_relu_backwards_into_batchnorm(Plan& p) {
  std::vector<std::string> out;
  if (!p.train) return out;
  const std::vector<std::vector<Use>> uses = buffer_uses(p, false);
  for (size_t ph = 0; ph < p.phases.size(); ++ph) {
    std::vector<Step>& steps = p.phases[ph].steps;
    for (size_t i = 0; i < steps.size(); ++i) {
      const Step& relu = steps[i];
      if (relu.kind == StepKind::free || relu.fn != Fn::relu_backward || relu.accumulate ||
          relu.args.size() != 3)
        continue;
      const int y = relu.need("y"), dy = relu.need("dy"), dx = relu.need("dx");
      const auto found = batchnorm_readers(p, uses, steps, ph, i, dx);
      if (!found) continue;
      const auto [part, bw] = *found;
      // y and dy must still hold the relu's values where the batchnorm's steps read them.
      const size_t last = std::max(part, bw);
      if (written_between(steps, i, last + 1, y) || written_between(steps, i, last + 1, dy))
        continue;
      const Buffer &yb = p.buffers[size_t(y)], &xb = p.buffers[size_t(steps[bw].need("x"))];
      if (yb.shape != xb.shape || yb.layout != xb.layout || yb.dtype != xb.dtype) continue;
      for (size_t k : {part, bw}) {
        for (Arg& a : steps[k].args)
          if (a.role == "dy") a.buffer = dy;
        steps[k].args.push_back(Arg{"relu_y", y});
        steps[k].node += "+" + relu.node;
      }
      out.push_back(steps[bw].node);
      steps.erase(steps.begin() + long(i));
      --i;
    }
  }
  return out;
}

} // namespace kiln
