// The mean squared error of logits against a teacher's logits (knowledge distillation, as
// FoldedCNNs trains its CIFAR models): torch.nn.functional.mse_loss with mean reduction.
#include "runtime/cpu/detail.hpp"

namespace kiln::cpu {

template <class T> double mse(CView<T> logits, CView<T> target) {
  detail::need_same(logits.shape, target.shape, "mse", "logits", "target");
  const int64_t n = numel(logits.shape);
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double d = double(logits.data[i]) - double(target.data[i]);
    sum += d * d;
  }
  return sum / double(n);
}

template <class T>
void mse_backward(CView<T> logits, CView<T> target, View<T> dlogits, bool accumulate) {
  detail::need_same(logits.shape, target.shape, "mse_backward", "logits", "target");
  detail::need_same(logits.shape, dlogits.shape, "mse_backward", "logits", "dlogits");
  const int64_t n = numel(logits.shape);
  const double scale = 2.0 / double(n);
  for (int64_t i = 0; i < n; ++i)
    detail::put(dlogits.data[i], (double(logits.data[i]) - double(target.data[i])) * scale,
                accumulate);
}

#define KILN_INSTANTIATE(T)                                                                        \
  template double mse<T>(CView<T>, CView<T>);                                                      \
  template void mse_backward<T>(CView<T>, CView<T>, View<T>, bool);
KILN_INSTANTIATE(float)
KILN_INSTANTIATE(double)
#undef KILN_INSTANTIATE

} // namespace kiln::cpu
