#include "generator/select/families/dense/dense_common.hpp"

#include <fmt/format.h>

namespace kiln::dense {

std::optional<DType> common_dtype(const StepInfo& s, std::string_view except) {
  std::optional<DType> t;
  for (const Arg& a : s.step.args) {
    if (!except.empty() && a.role == except) continue;
    const DType d = s.plan.buffers[a.buffer].dtype;
    if (!is_float(d)) continue;
    if (d == DType::f64 || (t && *t != d)) return std::nullopt;
    t = d;
  }
  return t;
}

std::optional<Layout> common_layout(const StepInfo& s) {
  std::optional<Layout> l;
  for (const Arg& a : s.step.args) {
    const Buffer& b = s.plan.buffers[a.buffer];
    if (b.shape.size() != 4) continue;
    if (l && *l != b.layout) return std::nullopt;
    l = b.layout;
  }
  return l.value_or(Layout::nchw);
}

Ncs ncs(const Shape& x) {
  Ncs r;
  r.n = x.at(0);
  r.c = x.at(1);
  for (size_t d = 2; d < x.size(); ++d)
    r.s *= x[d];
  return r;
}

bool channels_last(const Shape& x, Layout l) {
  return x.size() == 2 || (x.size() == 4 && l == Layout::nhwc) || ncs(x).s == 1;
}

std::string shape_tag(const Shape& x, char c) {
  if (x.size() == 4) return fmt::format("n{}{}{}h{}w{}", x[0], c, x[1], x[2], x[3]);
  if (x.size() == 2) return fmt::format("n{}{}{}", x[0], c, x[1]);
  return fmt::format("n{}{}{}s{}", x[0], c, x[1], ncs(x).s);
}

std::string layout_tag(const Shape& x, Layout l) {
  if (x.size() == 4) return std::string(layout_name(l));
  return x.size() == 2 ? "nc" : "ncs";
}

int64_t next_pow2(int64_t v) {
  int64_t p = 1;
  while (p < v)
    p *= 2;
  return p;
}

double reread_bytes(const GpuDesc& g, double bytes, double times) {
  return bytes <= double(g.l2_bytes) / 2 ? bytes : bytes * times;
}

std::vector<std::pair<std::string, Layout>> layouts_of(const StepInfo& s, Layout l) {
  std::vector<std::pair<std::string, Layout>> r;
  for (const Arg& a : s.step.args)
    if (s.plan.buffers[a.buffer].shape.size() == 4) r.push_back({a.role, l});
  return r;
}

} // namespace kiln::dense
