// layernorm over the channels of each position of [N, C, *spatial]: the statistics of a
// position are computed in double, in channel order, two passes (no cancellation), exactly
// as the forward computes them wherever the backward needs them.
#include "runtime/cpu/detail.hpp"

#include <cmath>

namespace kiln::cpu {

using detail::need;
using detail::put;

namespace {

// [N, C, S] view of x: S = the spatial size (1 for [N, C]); channel c of position (n, s) is
// at (n * C + c) * S + s.
struct Geo {
  int64_t n, c, s;
  explicit Geo(const Shape& x) {
    need(x.size() >= 2, "layernorm", "x must have at least 2 dimensions, got ", shape_str(x));
    n = x[0];
    c = x[1];
    s = detail::inner_size(x, 2);
  }
  int64_t at(int64_t n_, int64_t c_, int64_t s_) const { return (n_ * c + c_) * s + s_; }
};

template <class T>
void stats(const Geo& g, const T* x, int64_t n, int64_t s, double eps, double& mean,
           double& invstd) {
  double sum = 0;
  for (int64_t c = 0; c < g.c; ++c)
    sum += double(x[g.at(n, c, s)]);
  mean = sum / double(g.c);
  double var = 0;
  for (int64_t c = 0; c < g.c; ++c) {
    const double d = double(x[g.at(n, c, s)]) - mean;
    var += d * d;
  }
  invstd = 1.0 / std::sqrt(var / double(g.c) + eps);
}

} // namespace

template <class T>
void layernorm(double eps, CView<T> x, const T* weight, const T* bias, View<T> y) {
  detail::need_same(x.shape, y.shape, "layernorm", "x", "y");
  const Geo g(x.shape);
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t s = 0; s < g.s; ++s) {
      double mean, invstd;
      stats(g, x.data, n, s, eps, mean, invstd);
      for (int64_t c = 0; c < g.c; ++c) {
        const int64_t i = g.at(n, c, s);
        y.data[i] = T((double(x.data[i]) - mean) * invstd * double(weight[c]) + double(bias[c]));
      }
    }
}

// dx = invstd * (g - mean_c(g) - xhat * mean_c(g * xhat)) with g = dy * weight.
template <class T>
void layernorm_backward(double eps, CView<T> x, CView<T> dy, const T* weight, View<T> dx,
                        T* mean_out, T* invstd_out, bool accumulate) {
  detail::need_same(x.shape, dy.shape, "layernorm.backward", "x", "dy");
  detail::need_same(x.shape, dx.shape, "layernorm.backward", "x", "dx");
  const Geo g(x.shape);
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t s = 0; s < g.s; ++s) {
      double mean, invstd;
      stats(g, x.data, n, s, eps, mean, invstd);
      if (mean_out) mean_out[n * g.s + s] = T(mean);
      if (invstd_out) invstd_out[n * g.s + s] = T(invstd);
      double sg = 0, sgx = 0;
      for (int64_t c = 0; c < g.c; ++c) {
        const int64_t i = g.at(n, c, s);
        const double gi = double(dy.data[i]) * double(weight[c]);
        sg += gi;
        sgx += gi * (double(x.data[i]) - mean) * invstd;
      }
      sg /= double(g.c);
      sgx /= double(g.c);
      for (int64_t c = 0; c < g.c; ++c) {
        const int64_t i = g.at(n, c, s);
        const double xhat = (double(x.data[i]) - mean) * invstd;
        const double gi = double(dy.data[i]) * double(weight[c]);
        put(dx.data[i], invstd * (gi - sg - xhat * sgx), accumulate);
      }
    }
}

template <class T>
void layernorm_backward_params(CView<T> x, CView<T> dy, const T* mean, const T* invstd, T* dweight,
                               T* dbias, bool accumulate) {
  detail::need_same(x.shape, dy.shape, "layernorm.backward_params", "x", "dy");
  const Geo g(x.shape);
  for (int64_t c = 0; c < g.c; ++c) {
    double sw = 0, sb = 0;
    for (int64_t n = 0; n < g.n; ++n)
      for (int64_t s = 0; s < g.s; ++s) {
        const int64_t i = g.at(n, c, s), p = n * g.s + s;
        sw += double(dy.data[i]) * (double(x.data[i]) - double(mean[p])) * double(invstd[p]);
        sb += double(dy.data[i]);
      }
    put(dweight[c], sw, accumulate);
    put(dbias[c], sb, accumulate);
  }
}

template <class T> void layernorm_invstd(double eps, CView<T> x, View<T> y) {
  const Geo g(x.shape);
  detail::need(numel(y.shape) == g.n * g.s, "layernorm_invstd",
               "y must hold one value per position");
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t s = 0; s < g.s; ++s) {
      double mean, invstd;
      stats(g, x.data, n, s, eps, mean, invstd);
      y.data[n * g.s + s] = T(invstd);
    }
}

// invstd = (var + eps)^(-1/2) and dvar / dx_c = 2 (x_c - mean) / C (the mean's own
// derivative sums to zero), so dx_c = -dy * invstd^3 * (x_c - mean) / C.
template <class T>
void layernorm_invstd_backward(double eps, CView<T> x, CView<T> dy, View<T> dx, bool accumulate) {
  detail::need_same(x.shape, dx.shape, "layernorm_invstd.backward", "x", "dx");
  const Geo g(x.shape);
  detail::need(numel(dy.shape) == g.n * g.s, "layernorm_invstd.backward",
               "dy must hold one value per position");
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t s = 0; s < g.s; ++s) {
      double mean, invstd;
      stats(g, x.data, n, s, eps, mean, invstd);
      const double k = -double(dy.data[n * g.s + s]) * invstd * invstd * invstd / double(g.c);
      for (int64_t c = 0; c < g.c; ++c) {
        const int64_t i = g.at(n, c, s);
        put(dx.data[i], k * (double(x.data[i]) - mean), accumulate);
      }
    }
}

#define KILN_INSTANTIATE(T)                                                                        \
  template void layernorm<T>(double, CView<T>, const T*, const T*, View<T>);                       \
  template void layernorm_backward<T>(double, CView<T>, CView<T>, const T*, View<T>, T*, T*,       \
                                      bool);                                                       \
  template void layernorm_backward_params<T>(CView<T>, CView<T>, const T*, const T*, T*, T*,       \
                                             bool);                                                \
  template void layernorm_invstd<T>(double, CView<T>, View<T>);                                    \
  template void layernorm_invstd_backward<T>(double, CView<T>, CView<T>, View<T>, bool);
KILN_INSTANTIATE(float)
KILN_INSTANTIATE(double)
#undef KILN_INSTANTIATE

} // namespace kiln::cpu
