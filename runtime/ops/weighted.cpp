#include "runtime/ops/weighted.hpp"

namespace kiln {

void check_weighted_forward(const StepCheck& c) {
  c.expect("y", c.forward(c.shape("x")));
  c.expect("w", c.param(c.shape("x"), "weight").shape);
  if (c.has("b")) c.expect("b", {c.shape("y")[1]});
  if (c.has("residual")) c.same("residual", "y");
  check_gate(c);
}

void check_gate(const StepCheck& c) {
  if (!c.has("gate")) return;
  const Shape& x = c.shape("x");
  c.expect("gate", {x[0], x[1], 1, 1});
}

void check_backward_data(const StepCheck& c) {
  c.expect("dy", c.forward(c.shape("dx")));
  c.expect("w", c.param(c.shape("dx"), "weight").shape);
}

void check_backward_weight(const StepCheck& c) {
  c.expect("dy", c.forward(c.shape("x")));
  c.expect("dw", c.param(c.shape("x"), "weight").shape);
}

} // namespace kiln
