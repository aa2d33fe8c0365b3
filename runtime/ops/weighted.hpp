// The shape checks the ops with a weight (conv2d, linear) share: the forward (with its
// bias and residual), the data gradient and the weight gradient.
#pragma once

#include "runtime/ops/step_check.hpp"

namespace kiln {

void check_weighted_forward(const StepCheck& c); // x, w, [b], [residual], [gate] -> y
// A conv's squeeze-excite gate, where it has one: [N, C, 1, 1] of x (x is read scaled by it).
void check_gate(const StepCheck& c);
void check_backward_data(const StepCheck& c);    // dy, w -> dx
void check_backward_weight(const StepCheck& c);  // x, dy -> dw

} // namespace kiln
