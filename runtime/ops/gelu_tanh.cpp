// gelu_tanh: GELU's tanh approximation, nn.GELU(approximate="tanh").
// The op and its functions; what every activation op shares is in activation_op.hpp.
#include "runtime/ops/activation_op.hpp"

namespace kiln {

namespace {

using activation_op::shape;

Activation act(const Attrs&) { return Activation::gelu_tanh; }

constexpr OpDef op_defs[] = {{.kind = OpKind::gelu_tanh,
                              .name = "gelu_tanh",
                              .shape = shape,
                              .rowwise = true}}; // thop counts no activations

constexpr auto fn_defs = activation_op::fns<act>(Fn::gelu_tanh_forward, "gelu_tanh.forward",
                                                 Fn::gelu_tanh_backward, "gelu_tanh.backward");

} // namespace

namespace ops {
OpFile gelu_tanh_file() { return {op_defs, fn_defs}; }
} // namespace ops

} // namespace kiln
