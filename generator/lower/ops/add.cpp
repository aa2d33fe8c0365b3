// add: every input's gradient is dy.
#include "generator/lower/ops/shared_rules.hpp"

namespace kiln::lowering {

extern const OpLowering add_lowering{
    .op = OpKind::add,
    .forward = Fn::add_forward,
    .train_forward = Fn::add_forward,
    .input_grad = pass_gradient,
    .tileable = [](const Node& n, bool) { return n.shape.size() == 4; },
};

} // namespace kiln::lowering
