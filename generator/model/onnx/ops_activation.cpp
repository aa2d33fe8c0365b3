// Relu, HardSwish, Clip, HardSigmoid, Sigmoid, Gelu, Softmax, and the nodes inference drops:
// Identity, Dropout. (SiLU and GELU written out as Mul, Div, Erf: pattern.cpp.)
#include "generator/model/onnx/node_attrs.hpp"
#include "generator/model/onnx/ops.hpp"
#include "runtime/error.hpp"

#include <algorithm>
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
  if (c.opset < 14)
    throw Error("", node_label(n),
                cat("HardSwish is defined from opset 14; the model imports opset ", c.opset));
  c.add_layer(n, OpKind::hardswish, {}, {c.activation(n, 0)});
}

// Clip with constant bounds: Clip(0, none) is a ReLU, anything else kiln's clip (ReLU6 is
// Clip(0, 6)). Bounds are attributes before opset 11, optional inputs from 11 on.
void convert_clip(Converter& c, const onnx::NodeProto& n) {
  const NodeAttrs at(n, c.opset < 11 ? std::initializer_list<std::string_view>{"min", "max"}
                                     : std::initializer_list<std::string_view>{});
  constexpr float inf = std::numeric_limits<float>::infinity();
  float lo = at.get_float("min", -inf), hi = at.get_float("max", inf);
  const auto bound = [&](int i, const char* role) {
    const Tensor& t = c.constant(n, i, role);
    if (t.numel() != 1)
      throw Error("", node_label(n), cat(role, " must be a scalar, got ", shape_str(t.shape())));
    return float(t.get(0));
  };
  if (c.opset >= 11 && c.has_input(n, 1)) lo = bound(1, "min");
  if (c.opset >= 11 && c.has_input(n, 2)) hi = bound(2, "max");
  if (std::isnan(lo) || std::isnan(hi) || lo > hi)
    throw Error("", node_label(n), cat("Clip with min = ", lo, " and max = ", hi, " is empty"));
  const int x = c.activation(n, 0);
  if (lo == 0 && hi == inf) {
    c.add_layer(n, OpKind::relu, {}, {x});
    return;
  }
  // An open side as f32's largest value: the same function on every finite input.
  constexpr float big = std::numeric_limits<float>::max();
  Attrs a;
  a.min = std::max(lo, -big);
  a.max = std::min(hi, big);
  c.add_layer(n, OpKind::clip, a, {x});
}

// HardSigmoid: max(0, min(1, alpha * x + beta)), ONNX's defaults alpha = 0.2, beta = 0.5.
void convert_hard_sigmoid(Converter& c, const onnx::NodeProto& n) {
  const NodeAttrs at(n, {"alpha", "beta"});
  Attrs a;
  a.alpha = at.get_float("alpha", 0.2f);
  a.beta = at.get_float("beta", 0.5f);
  c.add_layer(n, OpKind::hardsigmoid, a, {c.activation(n, 0)});
}

void convert_sigmoid(Converter& c, const onnx::NodeProto& n) {
  const NodeAttrs at(n, {});
  c.add_layer(n, OpKind::sigmoid, {}, {c.activation(n, 0)});
}

// Gelu (opset 20): approximate "none" (the erf form) or "tanh".
void convert_gelu(Converter& c, const onnx::NodeProto& n) {
  const NodeAttrs at(n, {"approximate"});
  if (c.opset < 20)
    throw Error("", node_label(n),
                cat("Gelu is defined from opset 20; the model imports opset ", c.opset));
  const std::string approximate = at.get_string("approximate", "none");
  if (approximate != "none" && approximate != "tanh")
    throw Error("", node_label(n),
                cat("attribute \"approximate\" = \"", approximate, "\" (none or tanh)"));
  c.add_layer(n, approximate == "tanh" ? OpKind::gelu_tanh : OpKind::gelu, {},
              {c.activation(n, 0)});
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
  c.set_output(n, 0, c.raw_input(n, 0)); // a pending pattern passes through
  ++c.dropped;
}

void convert_dropout(Converter& c, const onnx::NodeProto& n) {
  const NodeAttrs at(n, {"ratio", "is_test", "seed"});
  c.require_unused_outputs(n, 1); // the mask
  if (c.has_input(n, 2) &&
      const_ints(n, c.constant(n, 2, "training_mode"), "training_mode") != std::vector<int64_t>{0})
    throw Error("", node_label(n), "training_mode is true: kiln imports inference graphs only");
  c.set_output(n, 0, c.raw_input(n, 0)); // a pending pattern passes through
  ++c.dropped;
}

} // namespace kiln::onnx_import
