// Rules several ops share (generator/lower/op_lowering.hpp): an input gradient that is the
// output gradient itself, the weight and bias gradients of a weighted op, and the window of
// a sliding-window op for tiling.
#pragma once

#include "generator/lower/op_lowering.hpp"

namespace kiln::lowering {

// dx (+)= dy: add's inputs and the views.
void pass_gradient(BackwardSite& site, int k, int dx, bool accumulate);
// dw (+)= the weight gradient `fn` computes from x and dy, and db (+)= the bias gradient.
void weight_and_bias_grads(BackwardSite& site, Fn weight_fn, bool accumulate);
// dx (+)= `backward` of x and dy: an activation whose gradient reads its input (hardswish,
// clip, sigmoid, ...). ActivationGrad<Fn> is it as an OpLowering's input_grad.
void activation_input_grad(BackwardSite& site, Fn backward, int dx, bool accumulate);
template <Fn Backward> void activation_grad(BackwardSite& site, int, int dx, bool accumulate) {
  activation_input_grad(site, Backward, dx, accumulate);
}
// An elementwise op tiles where its input is 4-D.
inline bool elementwise_tileable(const Node& n, bool) { return n.shape.size() == 4; }
// kernel, stride, padding (and dilation where the op has it) along one axis.
sched::Window conv_window(const Attrs& a, int axis);
sched::Window pool_window(const Attrs& a, int axis);
// 4-D, and padded alike before and after (a tiled segment pads tiles itself).
bool windowed_tileable(const Node& n);

} // namespace kiln::lowering
