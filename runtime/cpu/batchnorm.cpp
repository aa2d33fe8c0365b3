// batchnorm over axis 1 of [N, C, *spatial] (4-D or 2-D), inference and training, with the
// PyTorch formulas: training normalises by the biased batch variance over N * spatial.
#include "runtime/cpu/detail.hpp"

#include <cmath>
#include <vector>

namespace kiln::cpu {

namespace {

using detail::need;
using detail::put;

struct BnGeo {
  int64_t N, C, S; // S: spatial size per (n, c), 1 for [N, C]
};

BnGeo bn_geo(const Shape& x, std::string_view op) {
  need(x.size() == 4 || x.size() == 2, op, "expects [N, C, H, W] or [N, C], got ", shape_str(x));
  return {x[0], x[1], detail::inner_size(x, 2)};
}

// y = (x - mean) * scale + beta with scale = gamma * invstd, per channel.
template <class T>
void normalize(const BnGeo& g, const T* x, const T* gamma, const T* beta, const double* mean,
               const double* invstd, T* y) {
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t c = 0; c < g.C; ++c) {
      const double m = mean[c], scale = (gamma ? double(gamma[c]) : 1.0) * invstd[c];
      const double b = beta ? double(beta[c]) : 0.0;
      const T* xp = x + (n * g.C + c) * g.S;
      T* yp = y + (n * g.C + c) * g.S;
      for (int64_t i = 0; i < g.S; ++i)
        yp[i] = T((double(xp[i]) - m) * scale + b);
    }
}

} // namespace

template <class T>
void batchnorm_inference(const Attrs& a, CView<T> x, const T* gamma, const T* beta,
                         const T* running_mean, const T* running_var, View<T> y) {
  const BnGeo g = bn_geo(x.shape, "batchnorm_inference");
  detail::need_same(x.shape, y.shape, "batchnorm_inference", "input", "output");
  std::vector<double> mean(g.C), invstd(g.C);
  for (int64_t c = 0; c < g.C; ++c) {
    mean[c] = double(running_mean[c]);
    invstd[c] = 1.0 / std::sqrt(double(running_var[c]) + a.eps);
  }
  normalize(g, x.data, gamma, beta, mean.data(), invstd.data(), y.data);
}

template <class T>
void batchnorm_train(const Attrs& a, CView<T> x, const T* gamma, const T* beta, View<T> y,
                     T* save_mean, T* save_invstd) {
  const BnGeo g = bn_geo(x.shape, "batchnorm_train");
  detail::need_same(x.shape, y.shape, "batchnorm_train", "input", "output");
  const double count = double(g.N * g.S);
  std::vector<double> mean(g.C), invstd(g.C);
  for (int64_t c = 0; c < g.C; ++c) {
    // Two passes: the mean first, then squared deviations (no cancellation).
    double s = 0;
    for (int64_t n = 0; n < g.N; ++n) {
      const T* p = x.data + (n * g.C + c) * g.S;
      for (int64_t i = 0; i < g.S; ++i)
        s += double(p[i]);
    }
    const double m = s / count;
    double v = 0;
    for (int64_t n = 0; n < g.N; ++n) {
      const T* p = x.data + (n * g.C + c) * g.S;
      for (int64_t i = 0; i < g.S; ++i)
        v += (double(p[i]) - m) * (double(p[i]) - m);
    }
    mean[c] = m;
    invstd[c] = 1.0 / std::sqrt(v / count + a.eps);
    if (save_mean)
      save_mean[c] = T(m);
    if (save_invstd)
      save_invstd[c] = T(invstd[c]);
  }
  normalize(g, x.data, gamma, beta, mean.data(), invstd.data(), y.data);
}

// With xhat = (x - mean) * invstd, M = N * spatial:
//   dbeta = sum dy, dgamma = sum dy * xhat,
//   dx = gamma * invstd / M * (M * dy - dbeta - xhat * dgamma).
template <class T>
void batchnorm_backward(CView<T> x, CView<T> dy, const T* gamma, const T* save_mean,
                        const T* save_invstd, View<T> dx, T* dgamma, T* dbeta, bool accumulate) {
  const BnGeo g = bn_geo(x.shape, "batchnorm_backward");
  detail::need_same(x.shape, dy.shape, "batchnorm_backward", "input", "dy");
  if (dx.data)
    detail::need_same(x.shape, dx.shape, "batchnorm_backward", "input", "dx");
  const double count = double(g.N * g.S);
  for (int64_t c = 0; c < g.C; ++c) {
    const double m = double(save_mean[c]), is = double(save_invstd[c]);
    double sdy = 0, sdyx = 0;
    for (int64_t n = 0; n < g.N; ++n) {
      const T* xp = x.data + (n * g.C + c) * g.S;
      const T* dp = dy.data + (n * g.C + c) * g.S;
      for (int64_t i = 0; i < g.S; ++i) {
        sdy += double(dp[i]);
        sdyx += double(dp[i]) * (double(xp[i]) - m);
      }
    }
    const double dg = sdyx * is; // sum dy * xhat
    if (dgamma)
      put(dgamma[c], dg, accumulate);
    if (dbeta)
      put(dbeta[c], sdy, accumulate);
    if (!dx.data)
      continue;
    const double k = (gamma ? double(gamma[c]) : 1.0) * is / count;
    for (int64_t n = 0; n < g.N; ++n) {
      const T* xp = x.data + (n * g.C + c) * g.S;
      const T* dp = dy.data + (n * g.C + c) * g.S;
      T* dxp = dx.data + (n * g.C + c) * g.S;
      for (int64_t i = 0; i < g.S; ++i) {
        const double xhat = (double(xp[i]) - m) * is;
        put(dxp[i], k * (count * double(dp[i]) - sdy - xhat * dg), accumulate);
      }
    }
  }
}

template <class T>
void batchnorm_inference_backward(const Attrs& a, CView<T> dy, const T* gamma, const T* running_var,
                                  View<T> dx, bool accumulate) {
  const BnGeo g = bn_geo(dy.shape, "batchnorm_inference_backward");
  detail::need_same(dy.shape, dx.shape, "batchnorm_inference_backward", "dy", "dx");
  for (int64_t c = 0; c < g.C; ++c) {
    const double k = (gamma ? double(gamma[c]) : 1.0) / std::sqrt(double(running_var[c]) + a.eps);
    for (int64_t n = 0; n < g.N; ++n) {
      const T* dp = dy.data + (n * g.C + c) * g.S;
      T* dxp = dx.data + (n * g.C + c) * g.S;
      for (int64_t i = 0; i < g.S; ++i)
        put(dxp[i], k * double(dp[i]), accumulate);
    }
  }
}

#define KILN_INSTANTIATE(T)                                                                        \
  template void batchnorm_inference<T>(const Attrs&, CView<T>, const T*, const T*, const T*,       \
                                       const T*, View<T>);                                         \
  template void batchnorm_train<T>(const Attrs&, CView<T>, const T*, const T*, View<T>, T*, T*);   \
  template void batchnorm_backward<T>(CView<T>, CView<T>, const T*, const T*, const T*, View<T>,   \
                                      T*, T*, bool);                                               \
  template void batchnorm_inference_backward<T>(const Attrs&, CView<T>, const T*, const T*,        \
                                                View<T>, bool);
KILN_INSTANTIATE(float)
KILN_INSTANTIATE(double)
#undef KILN_INSTANTIATE

} // namespace kiln::cpu
