#include "generator/lower/ops/shared_rules.hpp"

namespace kiln::lowering {

void pass_gradient(BackwardSite& site, int, int dx, bool accumulate) {
  Step s = site.step(Fn::copy, {{"src", site.dy()}, {"dst", dx}});
  s.accumulate = accumulate;
  site.emit(std::move(s));
}

void activation_input_grad(BackwardSite& site, Fn backward, int dx, bool accumulate) {
  Step s = site.step(backward, {{"x", site.input(0)}, {"dy", site.dy()}, {"dx", dx}});
  s.accumulate = accumulate;
  site.emit(std::move(s));
}

void weight_and_bias_grads(BackwardSite& site, Fn weight_fn, bool accumulate) {
  Step w = site.step(weight_fn,
                     {{"x", site.input(0)}, {"dy", site.dy()}, {"dw", site.param_grad("weight")}});
  w.accumulate = accumulate;
  site.emit(std::move(w));
  if (site.attrs().bias) {
    Step b = site.step(Fn::bias_backward, {{"dy", site.dy()}, {"db", site.param_grad("bias")}});
    b.accumulate = accumulate;
    site.emit(std::move(b));
  }
}

sched::Window conv_window(const Attrs& a, int axis) {
  return {a.kernel[axis], a.stride[axis], a.padding[axis], a.dilation[axis]};
}

sched::Window pool_window(const Attrs& a, int axis) {
  return {a.kernel[axis], a.stride[axis], a.padding[axis], 1};
}

bool windowed_tileable(const Node& n) {
  return n.shape.size() == 4 && padding_end(n.attrs) == n.attrs.padding;
}

} // namespace kiln::lowering
