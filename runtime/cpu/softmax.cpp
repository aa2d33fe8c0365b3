// Softmax over axis 1 of [N, K, *spatial] and the mean softmax cross-entropy against integer
// targets [N, *spatial]. Numerically stable (the maximum is subtracted before exp). Loops run
// over the K classes outside and the contiguous spatial positions inside.
#include "runtime/cpu/detail.hpp"

#include <cmath>
#include <limits>
#include <vector>

namespace kiln::cpu {

using detail::need;
using detail::put;

namespace {

struct SmGeo {
  int64_t N, K, S;
};

SmGeo sm_geo(const Shape& x, std::string_view op) {
  need(x.size() >= 2, op, "needs at least 2 dimensions, got ", shape_str(x));
  return {x[0], x[1], detail::inner_size(x, 2)};
}

// For sample n: y = exp(x - max) / sum over k, written as T; returns per position the
// maximum and the sum (for the log-sum-exp of the cross-entropy) through mx and sum.
template <class T>
void softmax_sample(const SmGeo& g, const T* x, T* y, std::vector<double>& mx,
                    std::vector<double>& sum) {
  std::fill(mx.begin(), mx.end(), -std::numeric_limits<double>::infinity());
  std::fill(sum.begin(), sum.end(), 0.0);
  for (int64_t k = 0; k < g.K; ++k)
    for (int64_t s = 0; s < g.S; ++s)
      mx[s] = std::max(mx[s], double(x[k * g.S + s]));
  for (int64_t k = 0; k < g.K; ++k)
    for (int64_t s = 0; s < g.S; ++s)
      sum[s] += std::exp(double(x[k * g.S + s]) - mx[s]);
  for (int64_t k = 0; k < g.K; ++k)
    for (int64_t s = 0; s < g.S; ++s)
      y[k * g.S + s] = T(std::exp(double(x[k * g.S + s]) - mx[s]) / sum[s]);
}

} // namespace

template <class T> void softmax(CView<T> x, View<T> y) {
  const SmGeo g = sm_geo(x.shape, "softmax");
  detail::need_same(x.shape, y.shape, "softmax", "input", "output");
  std::vector<double> mx(g.S), sum(g.S);
  for (int64_t n = 0; n < g.N; ++n)
    softmax_sample(g, x.data + n * g.K * g.S, y.data + n * g.K * g.S, mx, sum);
}

// dx = y * (dy - sum_k y * dy)
template <class T> void softmax_backward(CView<T> y, CView<T> dy, View<T> dx, bool accumulate) {
  const SmGeo g = sm_geo(y.shape, "softmax_backward");
  detail::need_same(y.shape, dy.shape, "softmax_backward", "y", "dy");
  detail::need_same(y.shape, dx.shape, "softmax_backward", "y", "dx");
  std::vector<double> dot(g.S);
  for (int64_t n = 0; n < g.N; ++n) {
    const int64_t base = n * g.K * g.S;
    std::fill(dot.begin(), dot.end(), 0.0);
    for (int64_t k = 0; k < g.K; ++k)
      for (int64_t s = 0; s < g.S; ++s) {
        const int64_t i = base + k * g.S + s;
        dot[s] += double(y.data[i]) * double(dy.data[i]);
      }
    for (int64_t k = 0; k < g.K; ++k)
      for (int64_t s = 0; s < g.S; ++s) {
        const int64_t i = base + k * g.S + s;
        put(dx.data[i], double(y.data[i]) * (double(dy.data[i]) - dot[s]), accumulate);
      }
  }
}

namespace {

// Targets [N, *spatial] for logits [N, K, *spatial]: one per position, each in [0, K).
void check_targets(const SmGeo& g, std::span<const int64_t> targets, std::string_view op) {
  need(int64_t(targets.size()) == g.N * g.S, op, "expects ", g.N * g.S, " targets, got ",
       targets.size());
  for (size_t i = 0; i < targets.size(); ++i)
    need(targets[i] >= 0 && targets[i] < g.K, op, "target ", i, " is ", targets[i],
         ", outside the ", g.K, " classes [0, ", g.K, ")");
}

} // namespace

template <class T>
double softmax_cross_entropy(CView<T> logits, std::span<const int64_t> targets, View<T> probs) {
  const SmGeo g = sm_geo(logits.shape, "softmax_cross_entropy");
  detail::need_same(logits.shape, probs.shape, "softmax_cross_entropy", "logits", "probs");
  check_targets(g, targets, "softmax_cross_entropy");
  std::vector<double> mx(g.S), sum(g.S);
  double loss = 0;
  for (int64_t n = 0; n < g.N; ++n) {
    const T* x = logits.data + n * g.K * g.S;
    softmax_sample(g, x, probs.data + n * g.K * g.S, mx, sum);
    // -log softmax[target] = log(sum) + max - x[target]
    for (int64_t s = 0; s < g.S; ++s)
      loss += std::log(sum[s]) + mx[s] - double(x[targets[n * g.S + s] * g.S + s]);
  }
  return loss / double(g.N * g.S);
}

template <class T>
void softmax_cross_entropy_backward(CView<T> probs, std::span<const int64_t> targets,
                                    View<T> dlogits, bool accumulate) {
  const SmGeo g = sm_geo(probs.shape, "softmax_cross_entropy_backward");
  detail::need_same(probs.shape, dlogits.shape, "softmax_cross_entropy_backward", "probs",
                    "dlogits");
  check_targets(g, targets, "softmax_cross_entropy_backward");
  const double inv = 1.0 / double(g.N * g.S);
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t k = 0; k < g.K; ++k)
      for (int64_t s = 0; s < g.S; ++s) {
        const int64_t i = (n * g.K + k) * g.S + s;
        const double onehot = targets[n * g.S + s] == k ? 1.0 : 0.0;
        put(dlogits.data[i], (double(probs.data[i]) - onehot) * inv, accumulate);
      }
}

#define KILN_INSTANTIATE(T)                                                                        \
  template void softmax<T>(CView<T>, View<T>);                                                     \
  template void softmax_backward<T>(CView<T>, CView<T>, View<T>, bool);                            \
  template double softmax_cross_entropy<T>(CView<T>, std::span<const int64_t>, View<T>);           \
  template void softmax_cross_entropy_backward<T>(CView<T>, std::span<const int64_t>, View<T>,     \
                                                  bool);
KILN_INSTANTIATE(float)
KILN_INSTANTIATE(double)
#undef KILN_INSTANTIATE

} // namespace kiln::cpu
