// gelu: x * Phi(x), the erf form (nn.GELU()); ONNX Gelu (opset 20) or the Erf pattern.
// The op and its functions; what every activation op shares is in activation_op.hpp.
#include "runtime/ops/activation_op.hpp"

namespace kiln {

namespace {

using activation_op::shape;

Activation act(const Attrs&) { return Activation::gelu; }

constexpr OpDef op_defs[] = {{.kind = OpKind::gelu,
                              .name = "gelu",
                              .shape = shape,
                              .rowwise = true}}; // thop counts no activations

constexpr auto fn_defs =
    activation_op::fns<act>(Fn::gelu_forward, "gelu.forward", Fn::gelu_backward, "gelu.backward");

} // namespace

namespace ops {
OpFile gelu_file() { return {op_defs, fn_defs}; }
} // namespace ops

} // namespace kiln
