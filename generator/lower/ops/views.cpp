// flatten, fold and unfold: views of their input's bytes (no step); their gradient is dy,
// seen through the input's shape.
#include "generator/lower/ops/shared_rules.hpp"

namespace kiln::lowering {

extern const OpLowering flatten_lowering{.op = OpKind::flatten, .input_grad = pass_gradient};
extern const OpLowering fold_lowering{.op = OpKind::fold, .input_grad = pass_gradient};
extern const OpLowering unfold_lowering{.op = OpKind::unfold, .input_grad = pass_gradient};

} // namespace kiln::lowering
