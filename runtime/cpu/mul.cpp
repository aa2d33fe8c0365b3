// mul: the product of two activations, the second of the first's shape or [N, C, 1, 1]
// broadcast over H and W (a squeeze-excite gate), and the gradient of either input.
#include "runtime/cpu/detail.hpp"

namespace kiln::cpu {

using detail::need;
using detail::put;

namespace {

// Elements of `big` per element of `small` when small is big's [N, C, 1, 1] (H * W), 1 when
// the shapes agree.
int64_t spread(const Shape& big, const Shape& small, const char* what) {
  if (small == big) return 1;
  need(big.size() == 4 && small == Shape{big[0], big[1], 1, 1}, what, shape_str(small),
       " is neither ", shape_str(big), " nor its [N, C, 1, 1]");
  return big[2] * big[3];
}

} // namespace

template <class T> void mul(CView<T> a, CView<T> b, View<T> y) {
  need(a.shape == y.shape, "mul", "x0 ", shape_str(a.shape), " and y ", shape_str(y.shape),
       " differ");
  const int64_t hw = spread(a.shape, b.shape, "mul: x1 ");
  for (int64_t i = 0, n = numel(y.shape); i < n; ++i)
    y.data[i] = T(double(a.data[i]) * double(b.data[i / hw]));
}

template <class T> void mul_backward(CView<T> other, CView<T> dy, View<T> dx, bool accumulate) {
  if (dx.shape == dy.shape) { // dx = dy * other, other broadcast when it is [N, C, 1, 1]
    const int64_t hw = spread(dy.shape, other.shape, "mul.backward: x ");
    for (int64_t i = 0, n = numel(dy.shape); i < n; ++i)
      put(dx.data[i], double(dy.data[i]) * double(other.data[i / hw]), accumulate);
    return;
  }
  // dx of the broadcast input: the sum over H and W, in order, in double.
  need(other.shape == dy.shape, "mul.backward", "x ", shape_str(other.shape), " and dy ",
       shape_str(dy.shape), " differ");
  const int64_t hw = spread(dy.shape, dx.shape, "mul.backward: dx ");
  for (int64_t j = 0, m = numel(dx.shape); j < m; ++j) {
    double s = 0;
    for (int64_t k = 0; k < hw; ++k)
      s += double(dy.data[j * hw + k]) * double(other.data[j * hw + k]);
    put(dx.data[j], s, accumulate);
  }
}

#define KILN_INSTANTIATE(T)                                                                        \
  template void mul<T>(CView<T>, CView<T>, View<T>);                                               \
  template void mul_backward<T>(CView<T>, CView<T>, View<T>, bool);
KILN_INSTANTIATE(float)
KILN_INSTANTIATE(double)
#undef KILN_INSTANTIATE

} // namespace kiln::cpu
