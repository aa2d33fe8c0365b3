// silu: x * sigmoid(x) (swish; EfficientNet, YOLO). ONNX writes it as Sigmoid and Mul, which
// the importer recognises.
// The op and its functions; what every activation op shares is in activation_op.hpp.
#include "runtime/ops/activation_op.hpp"

namespace kiln {

namespace {

using activation_op::shape;

Activation act(const Attrs&) { return Activation::silu; }

constexpr OpDef op_defs[] = {{.kind = OpKind::silu,
                              .name = "silu",
                              .shape = shape,
                              .rowwise = true}}; // thop counts no activations

constexpr auto fn_defs =
    activation_op::fns<act>(Fn::silu_forward, "silu.forward", Fn::silu_backward, "silu.backward");

} // namespace

namespace ops {
OpFile silu_file() { return {op_defs, fn_defs}; }
} // namespace ops

} // namespace kiln
