// linear (y = x w^T + b) and its backward. Dot products keep eight partial sums in a fixed
// pattern so they vectorize and stay deterministic; the other two products accumulate whole
// rows in double, which vectorizes as is.
#include "runtime/cpu/detail.hpp"

#include <vector>

namespace kiln::cpu {

namespace {

using detail::need;
using detail::put;

struct LinGeo {
  int64_t N, F, K;
};

LinGeo lin_geo(const Shape& x, const Shape& w, const Shape& y, std::string_view op) {
  detail::need_rank(x, 2, op, "input");
  detail::need_rank(w, 2, op, "weight");
  detail::need_rank(y, 2, op, "output");
  need(x[0] == y[0] && w[0] == y[1] && w[1] == x[1], op, "shapes do not fit: input ", shape_str(x),
       ", weight ", shape_str(w), ", output ", shape_str(y));
  return {x[0], x[1], y[1]};
}

template <class T> double dot(const T* __restrict a, const T* __restrict b, int64_t n) {
  constexpr int lanes = 8;
  double p[lanes] = {};
  int64_t i = 0;
  for (; i + lanes <= n; i += lanes)
    for (int j = 0; j < lanes; ++j)
      p[j] += double(a[i + j]) * double(b[i + j]);
  for (int j = 0; i < n; ++i, ++j)
    p[j] += double(a[i]) * double(b[i]);
  double s = 0;
  for (double v : p)
    s += v;
  return s;
}

} // namespace

template <class T> void linear(CView<T> x, CView<T> w, const T* bias, View<T> y) {
  const LinGeo g = lin_geo(x.shape, w.shape, y.shape, "linear");
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t k = 0; k < g.K; ++k) {
      const double b = bias ? double(bias[k]) : 0.0;
      y.data[n * g.K + k] = T(b + dot(x.data + n * g.F, w.data + k * g.F, g.F));
    }
}

// dx[n, f] = sum_k dy[n, k] * w[k, f]
template <class T> void linear_backward_data(CView<T> dy, CView<T> w, View<T> dx, bool accumulate) {
  const LinGeo g = lin_geo(dx.shape, w.shape, dy.shape, "linear_backward_data");
  std::vector<double> acc_buf(g.F);
  double* __restrict acc = acc_buf.data();
  for (int64_t n = 0; n < g.N; ++n) {
    std::fill(acc, acc + g.F, 0.0);
    for (int64_t k = 0; k < g.K; ++k) {
      const double d = double(dy.data[n * g.K + k]);
      const T* __restrict wr = w.data + k * g.F;
      for (int64_t f = 0; f < g.F; ++f)
        acc[f] += d * double(wr[f]);
    }
    T* dxr = dx.data + n * g.F;
    for (int64_t f = 0; f < g.F; ++f)
      put(dxr[f], acc[f], accumulate);
  }
}

// dw[k, f] = sum_n dy[n, k] * x[n, f]
template <class T>
void linear_backward_weight(CView<T> x, CView<T> dy, View<T> dw, bool accumulate) {
  const LinGeo g = lin_geo(x.shape, dw.shape, dy.shape, "linear_backward_weight");
  std::vector<double> acc_buf(g.F);
  double* __restrict acc = acc_buf.data();
  for (int64_t k = 0; k < g.K; ++k) {
    std::fill(acc, acc + g.F, 0.0);
    for (int64_t n = 0; n < g.N; ++n) {
      const double d = double(dy.data[n * g.K + k]);
      const T* __restrict xr = x.data + n * g.F;
      for (int64_t f = 0; f < g.F; ++f)
        acc[f] += d * double(xr[f]);
    }
    T* dwr = dw.data + k * g.F;
    for (int64_t f = 0; f < g.F; ++f)
      put(dwr[f], acc[f], accumulate);
  }
}

#define KILN_INSTANTIATE(T)                                                                        \
  template void linear<T>(CView<T>, CView<T>, const T*, View<T>);                                  \
  template void linear_backward_data<T>(CView<T>, CView<T>, View<T>, bool);                        \
  template void linear_backward_weight<T>(CView<T>, CView<T>, View<T>, bool);
KILN_INSTANTIATE(float)
KILN_INSTANTIATE(double)
#undef KILN_INSTANTIATE

} // namespace kiln::cpu
