// reduce_sum / reduce_mean / reduce_max over any of C, H, W of [N, C, H, W] (or C of
// [N, C]): every element of x belongs to one output; walking x in order visits each
// output's elements in (c, h, w) order, which fixes the order of every sum and which
// maximum is "first".
#include "runtime/cpu/detail.hpp"

#include <vector>

namespace kiln::cpu {

using detail::need;
using detail::put;

namespace {

// x's extents as [N, C, H, W] and, for each element index, the index of its output.
struct Geometry {
  int64_t n, c, h, w;
  bool rc, rh, rw;
  int64_t count() const { return (rc ? c : 1) * (rh ? h : 1) * (rw ? w : 1); }
  int64_t outputs() const { return n * (rc ? 1 : c) * (rh ? 1 : h) * (rw ? 1 : w); }
  int64_t out(int64_t i) const {
    const int64_t iw = i % w, ih = i / w % h, ic = i / (w * h) % c, in = i / (w * h * c);
    const int64_t oc = rc ? 1 : c, oh = rh ? 1 : h, ow = rw ? 1 : w;
    return ((in * oc + (rc ? 0 : ic)) * oh + (rh ? 0 : ih)) * ow + (rw ? 0 : iw);
  }
};

Geometry geometry(const Attrs& a, const Shape& x, const char* op) {
  need(x.size() == 4 || (x.size() == 2 && !a.reduce_h && !a.reduce_w), op,
       "x must be [N, C, H, W] (or [N, C] reduced over C), got ", shape_str(x));
  need(a.reduce_c || a.reduce_h || a.reduce_w, op, "no axis to reduce");
  return {x[0],       x[1],      x.size() == 4 ? x[2] : 1, x.size() == 4 ? x[3] : 1, a.reduce_c,
          a.reduce_h, a.reduce_w};
}

// For each output, the index in x of its first maximum.
template <class T> std::vector<int64_t> first_max(const Geometry& g, const T* x) {
  std::vector<int64_t> at(size_t(g.outputs()), -1);
  for (int64_t i = 0, m = g.n * g.c * g.h * g.w; i < m; ++i) {
    int64_t& k = at[size_t(g.out(i))];
    if (k < 0 || x[i] > x[k]) k = i;
  }
  return at;
}

} // namespace

template <class T> void reduce(Reduce r, const Attrs& a, CView<T> x, View<T> y) {
  const Geometry g = geometry(a, x.shape, "reduce");
  need(numel(y.shape) == g.outputs(), "reduce", "y ", shape_str(y.shape), " does not hold the ",
       g.outputs(), " outputs of x ", shape_str(x.shape));
  if (r == Reduce::max) {
    const std::vector<int64_t> at = first_max(g, x.data);
    for (int64_t o = 0; o < g.outputs(); ++o)
      y.data[o] = x.data[at[size_t(o)]];
    return;
  }
  std::vector<double> s(size_t(g.outputs()), 0.0);
  for (int64_t i = 0, m = numel(x.shape); i < m; ++i)
    s[size_t(g.out(i))] += double(x.data[i]);
  const double scale = r == Reduce::mean ? 1.0 / double(g.count()) : 1.0;
  for (int64_t o = 0; o < g.outputs(); ++o)
    y.data[o] = T(s[size_t(o)] * scale);
}

template <class T>
void reduce_backward(Reduce r, const Attrs& a, const T* x, CView<T> dy, View<T> dx,
                     bool accumulate) {
  const Geometry g = geometry(a, dx.shape, "reduce.backward");
  need(numel(dy.shape) == g.outputs(), "reduce.backward", "dy ", shape_str(dy.shape),
       " does not hold the ", g.outputs(), " outputs of dx ", shape_str(dx.shape));
  const int64_t m = numel(dx.shape);
  if (r == Reduce::max) {
    need(x != nullptr, "reduce.backward", "max needs x");
    const std::vector<int64_t> at = first_max(g, x);
    for (int64_t i = 0; i < m; ++i) {
      const int64_t o = g.out(i);
      put(dx.data[i], at[size_t(o)] == i ? double(dy.data[o]) : 0.0, accumulate);
    }
    return;
  }
  const double scale = r == Reduce::mean ? 1.0 / double(g.count()) : 1.0;
  for (int64_t i = 0; i < m; ++i)
    put(dx.data[i], double(dy.data[g.out(i)]) * scale, accumulate);
}

#define KILN_INSTANTIATE(T)                                                                        \
  template void reduce<T>(Reduce, const Attrs&, CView<T>, View<T>);                                \
  template void reduce_backward<T>(Reduce, const Attrs&, const T*, CView<T>, View<T>, bool);
KILN_INSTANTIATE(float)
KILN_INSTANTIATE(double)
#undef KILN_INSTANTIATE

} // namespace kiln::cpu
