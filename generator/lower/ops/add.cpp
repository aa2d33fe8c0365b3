// add: every input's gradient is dy (a view of it where the input feeds nothing else).
#include "generator/lower/ops/shared_rules.hpp"

namespace kiln::lowering {

extern const OpLowering add_lowering{
    .op = OpKind::add,
    .forward = Fn::add_forward,
    .train_forward = Fn::add_forward,
    .input_grad = pass_gradient,
    .input_grad_is_dy = true,
    .tileable = [](const Node& n, bool) { return n.shape.size() == 4; },
};

} // namespace kiln::lowering
