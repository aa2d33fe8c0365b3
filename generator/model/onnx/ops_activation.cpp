// Relu, HardSwish, Clip (as a ReLU), Softmax, and the nodes inference drops: Identity, Dropout.
#include "generator/model/onnx/node_attrs.hpp"
#include "generator/model/onnx/ops.hpp"
#include "runtime/error.hpp"

#include <cmath>
#include <limits>

namespace kiln::onnx_import {

void convert_relu(Converter& c, const onnx::NodeProto& n) {
  const NodeAttrs at(n, {});
  c.add_layer(n, OpKind::relu, {}, {c.activation(n, 0)});
}

// HardSwish (opset 14): x * max(0, min(1, x / 6 + 1 / 2)), which is x * relu6(x + 3) / 6.
void convert_hardswish(Converter& c, const onnx::NodeProto& n) {
  const NodeAttrs at(n, {});
  c.add_layer(n, OpKind::hardswish, {}, {c.activation(n, 0)});
}

void convert_clip(Converter& c, const onnx::NodeProto& n) {
  const NodeAttrs at(n, {"min", "max"});
  constexpr float inf = std::numeric_limits<float>::infinity();
  float lo = at.get_float("min", -inf), hi = at.get_float("max", inf);
  const auto bound = [&](int i, const char* role) {
    const Tensor& t = c.constant(n, i, role);
    if (t.numel() != 1)
      throw Error("", node_label(n), cat(role, " must be a scalar, got ", shape_str(t.shape())));
    return float(t.get(0));
  };
  if (c.has_input(n, 1)) lo = bound(1, "min");
  if (c.has_input(n, 2)) hi = bound(2, "max");
  if (lo != 0 || hi != inf)
    throw Error("", node_label(n),
                cat("Clip with min = ", lo, " and max = ", hi,
                    " is not supported: kiln has no clipped activation (no relu6); only Clip "
                    "with min = 0 and no max, a ReLU, imports"));
  c.add_layer(n, OpKind::relu, {}, {c.activation(n, 0)});
}

void convert_softmax(Converter& c, const onnx::NodeProto& n) {
  const NodeAttrs at(n, {"axis"});
  const int x = c.activation(n, 0);
  const Shape s = c.shape_of(x);
  const int64_t rank = int64_t(s.size());
  const int64_t axis = at.get_int("axis", c.opset >= 13 ? -1 : 1);
  const int64_t a = axis < 0 ? axis + rank : axis;
  // kiln's softmax normalizes over axis 1 at each position of the axes after it. Before
  // opset 13 ONNX normalizes over all axes from `axis` on, which is the same only when the
  // axes after 1 are of size 1.
  int64_t trailing = 1;
  for (int64_t d = 2; d < rank; ++d)
    trailing *= s[d];
  const bool ok = a == 1 && (c.opset >= 13 || trailing == 1);
  if (!ok)
    throw Error("", node_label(n),
                cat("attribute \"axis\" = ", axis, " on an input of shape ", shape_str(s),
                    " (opset ", c.opset,
                    ") is not supported: kiln's softmax normalizes over the channel axis 1"));
  c.add_layer(n, OpKind::softmax, {}, {x});
}

void convert_identity(Converter& c, const onnx::NodeProto& n) {
  const NodeAttrs at(n, {});
  c.set_output(n, 0, c.input(n, 0));
  ++c.dropped;
}

void convert_dropout(Converter& c, const onnx::NodeProto& n) {
  const NodeAttrs at(n, {"ratio", "is_test", "seed"});
  c.require_unused_outputs(n, 1); // the mask
  if (c.has_input(n, 2) &&
      const_ints(n, c.constant(n, 2, "training_mode"), "training_mode") != std::vector<int64_t>{0})
    throw Error("", node_label(n), "training_mode is true: kiln imports inference graphs only");
  c.set_output(n, 0, c.input(n, 0));
  ++c.dropped;
}

} // namespace kiln::onnx_import
