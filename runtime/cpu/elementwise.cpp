// Elementwise ops: relu and its backward, the other activations and theirs, add, copy (the backward
// of add and of views). The optimizer updates are in optimizer.cpp.
#include "runtime/cpu/detail.hpp"

#include <cmath>

namespace kiln::cpu {

using detail::need;
using detail::put;

template <class T> void relu(CView<T> x, View<T> y) {
  const int64_t n = numel(x.shape);
  need(numel(y.shape) == n, "relu", "input ", shape_str(x.shape), " and output ",
       shape_str(y.shape), " differ in size");
  // NaN passes through (PyTorch's clamp_min does), so a broken input stays visible.
  for (int64_t i = 0; i < n; ++i)
    y.data[i] = x.data[i] > T(0) || std::isnan(x.data[i]) ? x.data[i] : T(0);
}

template <class T> void relu_backward(CView<T> y, CView<T> dy, View<T> dx, bool accumulate) {
  const int64_t n = numel(y.shape);
  need(numel(dy.shape) == n && numel(dx.shape) == n, "relu_backward", "y ", shape_str(y.shape),
       ", dy ", shape_str(dy.shape), " and dx ", shape_str(dx.shape), " differ in size");
  // PyTorch's threshold_backward: zero where y <= 0 (a NaN y lets the gradient through).
  for (int64_t i = 0; i < n; ++i)
    put(dx.data[i], y.data[i] <= T(0) ? 0.0 : double(dy.data[i]), accumulate);
}

template <class T> void activation(Activation a, CView<T> x, View<T> y) {
  const int64_t n = numel(x.shape);
  need(numel(y.shape) == n, activation_name(a), "input ", shape_str(x.shape), " and output ",
       shape_str(y.shape), " differ in size");
  for (int64_t i = 0; i < n; ++i)
    y.data[i] = T(activate(a, double(x.data[i])));
}

template <class T>
void activation_backward(Activation a, CView<T> x, CView<T> dy, View<T> dx, bool accumulate) {
  const int64_t n = numel(x.shape);
  need(numel(dy.shape) == n && numel(dx.shape) == n, activation_name(a), "x ", shape_str(x.shape),
       ", dy ", shape_str(dy.shape), " and dx ", shape_str(dx.shape), " differ in size");
  for (int64_t i = 0; i < n; ++i)
    put(dx.data[i], double(dy.data[i]) * activation_grad(a, double(x.data[i])), accumulate);
}

template <class T> void add(std::span<const CView<T>> xs, View<T> y) {
  need(!xs.empty(), "add", "needs at least one input");
  const int64_t n = numel(y.shape);
  for (const CView<T>& x : xs)
    need(numel(x.shape) == n, "add", "input ", shape_str(x.shape), " and output ",
         shape_str(y.shape), " differ in size");
  for (int64_t i = 0; i < n; ++i) {
    double s = 0;
    for (const CView<T>& x : xs)
      s += double(x.data[i]);
    y.data[i] = T(s);
  }
}

template <class T> void copy(CView<T> src, View<T> dst, bool accumulate) {
  const int64_t n = numel(src.shape);
  need(numel(dst.shape) == n, "copy", "source ", shape_str(src.shape), " and destination ",
       shape_str(dst.shape), " differ in size");
  for (int64_t i = 0; i < n; ++i)
    put(dst.data[i], double(src.data[i]), accumulate);
}

#define KILN_INSTANTIATE(T)                                                                        \
  template void relu<T>(CView<T>, View<T>);                                                        \
  template void relu_backward<T>(CView<T>, CView<T>, View<T>, bool);                               \
  template void activation<T>(Activation, CView<T>, View<T>);                                      \
  template void activation_backward<T>(Activation, CView<T>, CView<T>, View<T>, bool);             \
  template void add<T>(std::span<const CView<T>>, View<T>);                                        \
  template void copy<T>(CView<T>, View<T>, bool);
KILN_INSTANTIATE(float)
KILN_INSTANTIATE(double)
#undef KILN_INSTANTIATE

} // namespace kiln::cpu
