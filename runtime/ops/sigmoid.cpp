// sigmoid: 1 / (1 + exp(-x)).
// The op and its functions; what every activation op shares is in activation_op.hpp.
#include "runtime/ops/activation_op.hpp"

namespace kiln {

namespace {

using activation_op::shape;

Activation act(const Attrs&) { return Activation::sigmoid; }

constexpr OpDef op_defs[] = {{.kind = OpKind::sigmoid,
                              .name = "sigmoid",
                              .shape = shape,
                              .rowwise = true}}; // thop counts no activations

constexpr auto fn_defs = activation_op::fns<act>(Fn::sigmoid_forward, "sigmoid.forward",
                                                 Fn::sigmoid_backward, "sigmoid.backward");

} // namespace

namespace ops {
OpFile sigmoid_file() { return {op_defs, fn_defs}; }
} // namespace ops

} // namespace kiln
