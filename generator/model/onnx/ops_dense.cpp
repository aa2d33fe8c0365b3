// BatchNormalization, Gemm, MatMul (+ Add as its bias), Add. MatMul over the last axis of
// a channels-last 4-D activation (channels_last.hpp) is a 1x1 conv over its channels.
#include "generator/model/onnx/node_attrs.hpp"
#include "generator/model/onnx/ops.hpp"
#include "runtime/error.hpp"

namespace kiln::onnx_import {

namespace {

// [K, M] -> [M, K] as f32, scaled (Gemm's alpha).
Tensor transposed(const Tensor& b, double scale) {
  const int64_t k = b.shape()[0], m = b.shape()[1];
  Tensor t(DType::f32, {m, k});
  for (int64_t i = 0; i < k; ++i)
    for (int64_t j = 0; j < m; ++j)
      t.set(j * k + i, scale * b.get(i * m + j));
  return t;
}

Tensor scaled(const Tensor& b, double scale) {
  Tensor t = as_f32(b);
  if (scale != 1)
    for (int64_t i = 0; i < t.numel(); ++i)
      t.set(i, scale * t.get(i));
  return t;
}

// A bias broadcast along the last axis of [N, M]: [M], [1, M], or a scalar.
Tensor row_bias(const onnx::NodeProto& n, const Tensor& c, int64_t m, double scale) {
  const Shape& s = c.shape();
  Tensor t(DType::f32, {m});
  if (c.numel() == 1) {
    for (int64_t j = 0; j < m; ++j)
      t.set(j, scale * c.get(0));
  } else if ((s.size() == 1 && s[0] == m) || (s.size() == 2 && s[0] == 1 && s[1] == m)) {
    for (int64_t j = 0; j < m; ++j)
      t.set(j, scale * c.get(j));
  } else {
    throw Error("", node_label(n),
                cat("bias C has shape ", shape_str(s), "; kiln's linear takes a bias of [", m,
                    "] or [1, ", m, "] (one per output feature)"));
  }
  return t;
}

int need_2d(const Converter& c, const onnx::NodeProto& n, int i) {
  const int x = c.activation(n, i, "A");
  if (c.shape_of(x).size() != 2)
    throw Error("", node_label(n),
                cat("input A has shape ", shape_str(c.shape_of(x)),
                    "; kiln's linear takes [N, features] (Flatten before it)"));
  return x;
}

} // namespace

void convert_batch_norm(Converter& c, const onnx::NodeProto& n) {
  const NodeAttrs at(n, {"epsilon", "momentum", "spatial", "training_mode"});
  if (at.get_int("training_mode", 0) != 0)
    throw Error("", node_label(n),
                "attribute \"training_mode\" = 1: kiln imports inference BatchNormalization only");
  if (at.get_int("spatial", 1) != 1)
    throw Error("", node_label(n), "attribute \"spatial\" = 0 is not supported");
  c.require_unused_outputs(n, 1);
  const int x = c.activation(n, 0);
  const Shape xs = c.shape_of(x);
  if (xs.size() != 4 && xs.size() != 2)
    throw Error(
        "", node_label(n),
        cat("input has shape ", shape_str(xs), "; kiln's batchnorm takes [N, C, H, W] or [N, C]"));
  const char* roles[] = {"scale", "B", "input_mean", "input_var"};
  for (int i = 1; i <= 4; ++i)
    if (c.constant(n, i, roles[i - 1]).shape() != Shape{xs[1]})
      throw Error("", node_label(n),
                  cat(roles[i - 1], " has shape ",
                      shape_str(c.constant(n, i, roles[i - 1]).shape()), ", expected [", xs[1],
                      "]"));
  Attrs a;
  a.eps = at.get_float("epsilon", 1e-5f);
  const int layer = c.add_layer(n, OpKind::batchnorm, a, {x}, n.input(1));
  c.add_param(layer, "weight", c.constant(n, 1, "scale"));
  c.add_param(layer, "bias", c.constant(n, 2, "B"));
  c.add_param(layer, "running_mean", c.constant(n, 3, "input_mean"));
  c.add_param(layer, "running_var", c.constant(n, 4, "input_var"));
}

void convert_gemm(Converter& c, const onnx::NodeProto& n) {
  const NodeAttrs at(n, {"alpha", "beta", "transA", "transB", "broadcast"});
  if (at.get_int("transA", 0) != 0)
    throw Error("", node_label(n),
                "attribute \"transA\" = 1 is not supported (A is [N, K] activations)");
  const int x = need_2d(c, n, 0);
  const Tensor& b = c.constant(n, 1, "B");
  if (b.shape().size() != 2)
    throw Error("", node_label(n), cat("B has shape ", shape_str(b.shape()), ", expected 2-D"));
  const bool trans_b = at.get_int("transB", 0) != 0;
  const double alpha = at.get_float("alpha", 1), beta = at.get_float("beta", 1);
  const int64_t k = c.shape_of(x)[1];
  // kiln's weight is [out, in], as PyTorch's Linear and Gemm with transB = 1.
  const Tensor w = trans_b ? scaled(b, alpha) : transposed(b, alpha);
  if (w.shape()[1] != k)
    throw Error("", node_label(n),
                cat("B has shape ", shape_str(b.shape()), " (transB = ", int(trans_b),
                    ") but A has ", k, " features"));
  Attrs a;
  a.out_features = w.shape()[0];
  a.bias = c.has_input(n, 2) && beta != 0;
  const int layer = c.add_layer(n, OpKind::linear, a, {x}, n.input(1));
  c.add_param(layer, "weight", w);
  if (a.bias) c.add_param(layer, "bias", row_bias(n, c.constant(n, 2, "C"), a.out_features, beta));
}

// [N, H, W, C] x [C, K]: a bias-less 1x1 conv with weight [K, C, 1, 1].
void matmul_as_conv(Converter& c, const onnx::NodeProto& n) {
  const int x = c.activation(n, 0, "A");
  const Shape s = c.shape_of(x);
  const Tensor& b = c.constant(n, 1, "B");
  if (b.shape().size() != 2 || b.shape()[0] != s[1])
    throw Error("", node_label(n),
                cat("B has shape ", shape_str(b.shape()), ", expected [", s[1],
                    ", out_channels] (the channels-last activation has ", s[1], " channels)"));
  Attrs a;
  a.out_channels = b.shape()[1];
  a.kernel = {1, 1};
  a.bias = false; // an Add right after may give it one
  const int layer = c.add_layer(n, OpKind::conv2d, a, {x}, n.input(1));
  c.add_param(layer, "weight", transposed(b, 1).reshaped({a.out_channels, s[1], 1, 1}));
}

void convert_matmul(Converter& c, const onnx::NodeProto& n) {
  const NodeAttrs at(n, {});
  if (c.all_inputs_const(n))
    throw Error("", node_label(n), "MatMul of two constants is not folded by kiln");
  if (c.channels_last(n, 0)) return matmul_as_conv(c, n);
  if (c.shape_of(c.activation(n, 0, "A")).size() == 4)
    throw Error("", node_label(n),
                "MatMul over the last axis (W) of an NCHW activation: kiln maps a 4-D MatMul "
                "only over the channels, after Transpose(0, 2, 3, 1)");
  const int x = need_2d(c, n, 0);
  const Tensor& b = c.constant(n, 1, "B");
  if (b.shape().size() != 2 || b.shape()[0] != c.shape_of(x)[1])
    throw Error("", node_label(n),
                cat("B has shape ", shape_str(b.shape()), ", expected [", c.shape_of(x)[1],
                    ", out_features]"));
  Attrs a;
  a.out_features = b.shape()[1];
  a.bias = false; // an Add right after may give it one
  const int layer = c.add_layer(n, OpKind::linear, a, {x}, n.input(1));
  c.add_param(layer, "weight", transposed(b, 1));
}

void convert_add(Converter& c, const onnx::NodeProto& n) {
  if (c.all_inputs_const(n)) return convert_arith(c, n);
  if (add_pending(c, n)) return;
  const NodeAttrs at(n, {});
  const int ci = c.input(n, 0).is_const ? 0 : c.input(n, 1).is_const ? 1 : -1;
  if (ci < 0) {
    const int a = c.activation(n, 0), b = c.activation(n, 1);
    if (c.shape_of(a) != c.shape_of(b))
      throw Error("", node_label(n),
                  cat("adds ", shape_str(c.shape_of(a)), " and ", shape_str(c.shape_of(b)),
                      ": kiln's add takes inputs of the same shape (no broadcasting)"));
    c.add_layer(n, OpKind::add, {}, {a, b});
    return;
  }
  // An activation plus a constant: folded into the bias of the layer before it.
  shift_channels(c, n, ci, 1.0);
}

} // namespace kiln::onnx_import
