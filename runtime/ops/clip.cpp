// clip: min(max(x, min), max), torch.clamp / nn.Hardtanh (ReLU6 is clip(0, 6), ONNX Clip
// with constant bounds); its gradient is 1 strictly between the bounds (nn.ReLU6's).
// The op and its functions; what every activation op shares is in activation_op.hpp.
#include "runtime/error.hpp"
#include "runtime/ops/activation_op.hpp"

namespace kiln {

namespace {

constexpr AttrSpec attrs[] = {{"min", AttrType::number, true}, {"max", AttrType::number, true}};

Shape shape(const Attrs& a, std::span<const Shape> in) {
  if (!(a.min <= a.max)) throw Error(cat("min ", a.min, " exceeds max ", a.max));
  return in[0];
}

Activation act(const Attrs& a) { return Activation::clip(float(a.min), float(a.max)); }

constexpr OpDef op_defs[] = {{.kind = OpKind::clip,
                              .name = "clip",
                              .attrs = attrs,
                              .shape = shape,
                              .rowwise = true}}; // thop counts no activations

constexpr auto fn_defs =
    activation_op::fns<act>(Fn::clip_forward, "clip.forward", Fn::clip_backward, "clip.backward");

} // namespace

namespace ops {
OpFile clip_file() { return {op_defs, fn_defs}; }
} // namespace ops

} // namespace kiln
