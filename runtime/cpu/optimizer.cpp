// The optimizer updates of a training step's update phase: SGD (weight decay, momentum) and
// Adam (bias-corrected), as torch.optim computes them, each element in double and rounded
// once into its storage type.
#include "runtime/cpu/detail.hpp"

#include <cmath>

namespace kiln::cpu {

using detail::need;

template <class T> void sgd_update(View<T> param, CView<T> grad, double lr) {
  sgd_update<T>(param, grad, nullptr, Sgd{lr, 0, 0});
}

template <class T> void sgd_update(View<T> param, CView<T> grad, T* velocity, const Sgd& h) {
  const int64_t n = numel(param.shape);
  need(numel(grad.shape) == n, "sgd_update", "parameter ", shape_str(param.shape), " and gradient ",
       shape_str(grad.shape), " differ in size");
  need(h.momentum == 0 || velocity, "sgd_update", "momentum needs a velocity");
  for (int64_t i = 0; i < n; ++i) {
    const double p = double(param.data[i]);
    double g = double(grad.data[i]) + h.weight_decay * p;
    if (h.momentum != 0) {
      const double u = h.momentum * double(velocity[i]) + g;
      velocity[i] = T(u);
      g = u;
    }
    param.data[i] = T(p - h.lr * g);
  }
}

template <class T>
void adam_update(View<T> param, CView<T> grad, T* m, T* v, int64_t t, const Adam& h) {
  const int64_t n = numel(param.shape);
  need(numel(grad.shape) == n, "adam_update", "parameter ", shape_str(param.shape),
       " and gradient ", shape_str(grad.shape), " differ in size");
  need(t >= 1, "adam_update", "the step count must be at least 1, got ", t);
  const double bc1 = 1 - std::pow(h.beta1, double(t)), bc2 = 1 - std::pow(h.beta2, double(t));
  const double step = h.lr / bc1, root2 = std::sqrt(bc2);
  for (int64_t i = 0; i < n; ++i) {
    const double p = double(param.data[i]);
    const double g = double(grad.data[i]) + h.weight_decay * p;
    const double mi = h.beta1 * double(m[i]) + (1 - h.beta1) * g;
    const double vi = h.beta2 * double(v[i]) + (1 - h.beta2) * g * g;
    m[i] = T(mi);
    v[i] = T(vi);
    param.data[i] = T(p - step * mi / (std::sqrt(vi) / root2 + h.eps));
  }
}

#define KILN_INSTANTIATE(T)                                                                        \
  template void sgd_update<T>(View<T>, CView<T>, double);                                          \
  template void sgd_update<T>(View<T>, CView<T>, T*, const Sgd&);                                  \
  template void adam_update<T>(View<T>, CView<T>, T*, T*, int64_t, const Adam&);
KILN_INSTANTIATE(float)
KILN_INSTANTIATE(double)
#undef KILN_INSTANTIATE

} // namespace kiln::cpu
