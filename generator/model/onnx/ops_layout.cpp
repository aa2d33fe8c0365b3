// LayerNormalization (opset 17): kiln's layernorm normalises each position over its
// channels, which is ONNX's LayerNormalization over the last axis of a channels-last
// activation (ConvNeXt: after Transpose(0, 2, 3, 1)), or over axis 1 (= -1) of [N, C].
// ONNX normalises over every axis from `axis` on, so axis 1 of an NCHW [N, C, H, W] is a
// different op (over C, H and W) unless H = W = 1. The node layer_norm_pattern.cpp makes of
// an exporter's written-out LayerNorm normalises its one axis alone (kReducedAxisAttr): the
// channels of an NCHW activation too; it may have no Scale (ones). Its Mean and InvStdDev
// outputs, where read, are layers of their own (reduce_mean over C, layernorm_invstd).
#include "generator/model/onnx/layer_norm_pattern.hpp"
#include "generator/model/onnx/node_attrs.hpp"
#include "generator/model/onnx/ops.hpp"
#include "runtime/error.hpp"

#include <algorithm>
#include <optional>

namespace kiln::onnx_import {

namespace {

// The constant's per-channel values when it broadcasts along the channel axis of an
// activation of shape s (its last axis when channels-last); nullopt otherwise.
std::optional<std::vector<double>> per_channel_values(const Tensor& k, const Shape& s, bool last) {
  const int64_t ch = s[1];
  const Shape& ks = k.shape();
  // Where the channel axis falls when ks is aligned to the activation's trailing axes.
  const int64_t rank = int64_t(s.size()), kr = int64_t(ks.size());
  if (kr == 0 || kr > rank || k.numel() != ch) return std::nullopt;
  const int64_t channel_axis = last ? rank - 1 : 1; // ONNX axis of the channels
  const int64_t at = channel_axis - (rank - kr);    // that axis in ks
  if (at < 0 || ks[size_t(at)] != ch) return std::nullopt;
  std::vector<double> v(static_cast<size_t>(ch));
  for (int64_t i = 0; i < ch; ++i)
    v[size_t(i)] = k.get(i);
  return v;
}

} // namespace

void convert_layer_norm(Converter& c, const onnx::NodeProto& n) {
  const NodeAttrs at(n, {"axis", "epsilon", "stash_type", kReducedAxisAttr});
  const bool one_axis = at.get_int(kReducedAxisAttr, 0) != 0;
  if (at.get_int("stash_type", 1) != 1)
    throw Error("", node_label(n),
                cat("attribute \"stash_type\" = ", at.get_int("stash_type", 1),
                    ": kiln computes the statistics in float (stash_type 1) or wider"));
  const int x = c.activation(n, 0, "X");
  const bool last = c.channels_last(n, 0);
  const Shape s = c.shape_of(x);
  const int64_t rank = int64_t(s.size());
  int64_t axis = at.get_int("axis", -1);
  if (axis < 0) axis += rank;
  // The ONNX axis that holds kiln's channels, and whether axes after it are all 1.
  const int64_t channel_axis = last ? rank - 1 : 1;
  bool trailing_ones = true;
  if (!last)
    for (int64_t d = 2; d < rank; ++d)
      trailing_ones = trailing_ones && s[size_t(d)] == 1;
  const bool over_channels =
      (rank == 4 || rank == 2) && axis == channel_axis && (trailing_ones || one_axis);
  if (!over_channels)
    throw Error("", node_label(n),
                cat("attribute \"axis\" = ", at.get_int("axis", -1), " on ",
                    last ? "a channels-last activation" : "an NCHW activation", " of shape ",
                    shape_str(s),
                    ": kiln's layernorm normalises over the channels alone (the last axis after "
                    "Transpose(0, 2, 3, 1), or axis 1 of [N, C])"));
  const int64_t ch = s[1];
  const auto per_channel = [&](int i, std::string_view role) {
    const Tensor& t = c.constant(n, i, role);
    if (one_axis) { // the written-out chain's Mul and Add: broadcast along the channel axis
      const auto v = per_channel_values(t, s, last);
      if (!v)
        throw Error("", node_label(n),
                    cat(role, " has shape ", shape_str(t.shape()),
                        ": expected one value per channel, broadcast along the channel axis"));
      Tensor r(DType::f32, {ch});
      for (int64_t c2 = 0; c2 < ch; ++c2)
        r.set(c2, (*v)[size_t(c2)]);
      return r;
    }
    // [C] or C with leading ones (the normalised shape as ONNX broadcasts it).
    bool ok = t.numel() == ch && !t.shape().empty() && t.shape().back() == ch;
    if (!ok)
      throw Error("", node_label(n),
                  cat(role, " has shape ", shape_str(t.shape()), ", expected [", ch, "]"));
    return as_f32(t).reshaped({ch});
  };
  Attrs a;
  a.eps = at.get_float("epsilon", 1e-5f);
  const bool ones = one_axis && !c.has_input(n, 1);
  const int layer = c.add_layer(n, OpKind::layernorm, a, {x}, ones ? "" : n.input(1));
  if (ones) {
    Tensor one(DType::f32, {ch});
    for (int64_t i = 0; i < ch; ++i)
      one.set(i, 1);
    c.add_param(layer, "weight", one);
  } else {
    c.add_param(layer, "weight", per_channel(1, "Scale"));
  }
  if (c.has_input(n, 2)) {
    c.add_param(layer, "bias", per_channel(2, "B"));
  } else {
    Tensor zero(DType::f32, {ch});
    for (int64_t i = 0; i < ch; ++i)
      zero.set(i, 0);
    c.add_param(layer, "bias", zero);
  }
  // Mean and InvStdDev where the graph reads them: each position's statistics over the
  // channels, [N, 1, H, W] ([N, H, W, 1] as ONNX sees a channels-last region; [N, 1] of
  // [N, C]): reduce_mean over C and layernorm_invstd, each a layer of its own on x.
  const auto stat = [&](int i, std::string_view suffix, OpKind op, const Attrs& sa) {
    const std::string& o = i < n.output_size() ? n.output(i) : std::string();
    if (o.empty() || !c.uses.count(o) || c.uses.at(o) == 0) return;
    onnx::NodeProto r = n;
    r.set_name(n.name().empty() ? "" : n.name() + std::string(suffix));
    r.set_output(0, o);
    c.add_layer(r, op, sa, {x});
  };
  Attrs mean;
  mean.reduce_c = true;
  stat(1, ".mean", OpKind::reduce_mean, mean);
  Attrs inv;
  inv.eps = a.eps;
  stat(2, ".invstd", OpKind::layernorm_invstd, inv);
}

} // namespace kiln::onnx_import

namespace kiln::onnx_import {

namespace {

// y[n, c] = scale[c] * x[n, c] + shift[c] where no layer before x can absorb it (x shared, a
// pool, an add, the network input): a 1x1 depthwise conv2d (groups = C), which every conv
// path runs, fuses and trains. x must be 4-D.
void channel_affine_layer(Converter& c, const onnx::NodeProto& n, int ref,
                          const std::vector<double>& scale, const std::vector<double>& shift) {
  const int64_t ch = int64_t(scale.size());
  Attrs a;
  a.out_channels = ch;
  a.kernel = {1, 1};
  a.groups = ch;
  a.bias = true;
  const int layer = c.add_layer(n, OpKind::conv2d, a, {ref});
  Tensor w(DType::f32, {ch, 1, 1, 1}), b(DType::f32, {ch});
  for (int64_t i = 0; i < ch; ++i) {
    w.set(i, scale[size_t(i)]);
    b.set(i, shift[size_t(i)]);
  }
  c.add_param(layer, "weight", w);
  c.add_param(layer, "bias", b);
}

bool foldable_into(const Converter& c, int ref) {
  if (ref == kModelInput || c.readers(ref) != 1) return false;
  const OpKind op = c.model.nodes[size_t(ref)].op;
  return op == OpKind::conv2d || op == OpKind::linear || op == OpKind::batchnorm ||
         op == OpKind::layernorm;
}

} // namespace

void scale_channels(Converter& c, const onnx::NodeProto& n, int k, bool reciprocal) {
  const int ai = 1 - k;
  const int ref = c.activation(n, ai);
  const bool last = c.channels_last(n, ai);
  const Tensor& t = c.constant(n, k, "scale");
  const Shape s = c.shape_of(ref);
  const auto vals = per_channel_values(t, s, last);
  const auto refuse = [&](const std::string& why) {
    return Error("", node_label(n),
                 cat(n.op_type(), " of an activation ", shape_str(s),
                     last ? " (channels-last)" : "", " by a constant ", shape_str(t.shape()), ": ",
                     why));
  };
  if (!vals)
    throw refuse("kiln takes a per-channel constant ([C, 1, 1], [1, C, 1, 1]; [C] after "
                 "Transpose(0, 2, 3, 1)) or a scalar");
  if (!foldable_into(c, ref)) {
    if (s.size() != 4)
      throw refuse("kiln folds a per-channel scale of [N, C] into the Conv, MatMul, Gemm, "
                   "BatchNormalization or LayerNormalization right before it when nothing else "
                   "reads that output, and runs one of [N, C, H, W] as its own layer");
    std::vector<double> scale = *vals, zero(vals->size(), 0.0);
    if (reciprocal)
      for (double& f : scale)
        f = 1.0 / f;
    return channel_affine_layer(c, n, ref, scale, zero);
  }
  Node* layer = &c.model.nodes[size_t(ref)];
  // y = scale[o] * (w[o] . x + b[o]): row o of the weight and the bias (batchnorm's and
  // layernorm's affine weight and bias) scaled.
  for (const char* suffix : {"weight", "bias"}) {
    auto it = c.weights.find(layer->name + "." + suffix);
    if (it == c.weights.end()) continue;
    Tensor& w = it->second;
    const int64_t rows = int64_t(vals->size()), per = w.numel() / rows;
    for (int64_t o = 0; o < rows; ++o) {
      const double f = reciprocal ? 1.0 / (*vals)[size_t(o)] : (*vals)[size_t(o)];
      for (int64_t j = 0; j < per; ++j)
        w.set(o * per + j, double(w.get(o * per + j)) * f);
    }
  }
  ++c.folded;
  Value v;
  v.ref = ref;
  c.set_output(n, 0, v);
}

} // namespace kiln::onnx_import

namespace kiln::onnx_import {

void shift_channels(Converter& c, const onnx::NodeProto& n, int k, double sign) {
  const int ai = 1 - k;
  const int ref = c.activation(n, ai);
  const bool last = c.channels_last(n, ai);
  const Tensor& t = c.constant(n, k, "bias");
  const Shape s = c.shape_of(ref);
  const int64_t ch = s[1];
  std::optional<std::vector<double>> vals = per_channel_values(t, s, last);
  if (!vals && t.numel() == 1) vals = std::vector<double>(static_cast<size_t>(ch), t.get(0));
  if (vals && !foldable_into(c, ref) && s.size() == 4) { // its own layer
    std::vector<double> shift = *vals;
    for (double& f : shift)
      f *= sign;
    return channel_affine_layer(c, n, ref, std::vector<double>(shift.size(), 1.0), shift);
  }
  Node* layer = ref == kModelInput ? nullptr : &c.model.nodes[size_t(ref)];
  if (!vals || !foldable_into(c, ref))
    throw Error("", node_label(n),
                cat(n.op_type() == "Sub" ? "subtracts" : "adds", " a constant ",
                    shape_str(t.shape()), " to an activation ", shape_str(s),
                    last ? " (channels-last)" : "",
                    ": kiln's add takes two activations; a scalar or per-channel constant is "
                    "folded into the bias of the Conv, MatMul, Gemm, BatchNormalization or "
                    "LayerNormalization right before it when nothing else reads that output, "
                    "and runs as its own layer on [N, C, H, W]"));
  // y = w . x + b + sign * k: the bias (a zero one where the layer had none) shifted.
  const std::string name = layer->name + ".bias";
  if (!c.weights.count(name)) {
    Tensor zero(DType::f32, {ch});
    for (int64_t i = 0; i < ch; ++i)
      zero.set(i, 0);
    c.add_param(ref, "bias", zero);
    layer->attrs.bias = true;
  }
  Tensor& b = c.weights.at(name);
  for (int64_t i = 0; i < ch; ++i)
    b.set(i, double(b.get(i)) + sign * (*vals)[size_t(i)]);
  ++c.folded;
  Value v;
  v.ref = ref;
  c.set_output(n, 0, v);
}

void convert_sub(Converter& c, const onnx::NodeProto& n) {
  if (c.all_inputs_const(n)) return convert_arith(c, n);
  const NodeAttrs at(n, {});
  if (!c.input(n, 1).is_const)
    throw Error("", node_label(n),
                "subtracts an activation: kiln imports Sub of an activation minus a scalar or "
                "per-channel constant only (folded into the bias before it)");
  shift_channels(c, n, 1, -1.0);
}

} // namespace kiln::onnx_import
