// hardsigmoid: max(0, min(1, alpha * x + beta)); PyTorch's nn.Hardsigmoid is alpha = 1/6,
// beta = 1/2 (the defaults here), ONNX HardSigmoid's default alpha is 0.2.
// The op and its functions; what every activation op shares is in activation_op.hpp.
#include "runtime/ops/activation_op.hpp"

namespace kiln {

namespace {

constexpr AttrSpec attrs[] = {{"alpha", AttrType::number, false},
                              {"beta", AttrType::number, false}};

using activation_op::shape;

Activation act(const Attrs& a) { return Activation::hardsigmoid(float(a.alpha), float(a.beta)); }

constexpr OpDef op_defs[] = {{.kind = OpKind::hardsigmoid,
                              .name = "hardsigmoid",
                              .attrs = attrs,
                              .shape = shape,
                              .rowwise = true}}; // thop counts no activations

constexpr auto fn_defs = activation_op::fns<act>(Fn::hardsigmoid_forward, "hardsigmoid.forward",
                                                 Fn::hardsigmoid_backward, "hardsigmoid.backward");

} // namespace

namespace ops {
OpFile hardsigmoid_file() { return {op_defs, fn_defs}; }
} // namespace ops

} // namespace kiln
