// Conv, ConvTranspose, MaxPool, AveragePool, GlobalAveragePool.
#include "generator/model/onnx/node_attrs.hpp"
#include "generator/model/onnx/ops.hpp"
#include "runtime/error.hpp"

#include <algorithm>

namespace kiln::onnx_import {

namespace {

Error attr_error(const onnx::NodeProto& n, std::string_view attr, const std::string& what) {
  return Error("", node_label(n), cat("attribute \"", attr, "\" ", what));
}

Int2 pair(const onnx::NodeProto& n, const NodeAttrs& at, std::string_view name, Int2 fallback) {
  const auto v = at.get_ints(name);
  if (!v) return fallback;
  if (v->size() != 2)
    throw attr_error(n, name,
                     cat("has ", v->size(), " values; kiln imports 2-D (NCHW) layers only"));
  return {(*v)[0], (*v)[1]};
}

// A sliding window's attributes in kiln's form, ONNX auto_pad resolved to explicit padding.
struct Window {
  Int2 kernel, stride, dilation, pad_begin, pad_end;
  bool same = false; // auto_pad SAME_*: the output is ceil(in / stride)
};

Window read_window(const onnx::NodeProto& n, const NodeAttrs& at, const Shape& x, Int2 kernel) {
  if (x.size() != 4)
    throw Error("", node_label(n),
                cat("input has shape ", shape_str(x), "; kiln imports 2-D (NCHW) layers only"));
  Window w;
  w.kernel = pair(n, at, "kernel_shape", kernel);
  if (kernel[0] > 0 && w.kernel != kernel)
    throw attr_error(n, "kernel_shape", "disagrees with the weight's shape");
  if (w.kernel[0] <= 0 || w.kernel[1] <= 0)
    throw attr_error(n, "kernel_shape", "is missing or not positive");
  w.stride = pair(n, at, "strides", {1, 1});
  w.dilation = pair(n, at, "dilations", {1, 1});
  for (int i = 0; i < 2; ++i) {
    if (w.stride[i] <= 0) throw attr_error(n, "strides", "must be positive");
    if (w.dilation[i] <= 0) throw attr_error(n, "dilations", "must be positive");
  }
  const std::string auto_pad = at.get_string("auto_pad", "NOTSET");
  if (auto_pad == "NOTSET") {
    const auto pads = at.get_ints("pads").value_or(std::vector<int64_t>{0, 0, 0, 0});
    if (pads.size() != 4)
      throw attr_error(n, "pads", cat("has ", pads.size(), " values, expected 4 (2-D)"));
    for (int64_t p : pads)
      if (p < 0) throw attr_error(n, "pads", "must not be negative (kiln does not crop)");
    w.pad_begin = {pads[0], pads[1]};
    w.pad_end = {pads[2], pads[3]};
  } else if (auto_pad == "VALID") {
    w.pad_begin = w.pad_end = {0, 0};
  } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    w.same = true;
    for (int i = 0; i < 2; ++i) {
      const int64_t in = x[2 + i], s = w.stride[i];
      const int64_t out = (in + s - 1) / s;
      const int64_t total =
          std::max<int64_t>(0, (out - 1) * s + (w.kernel[i] - 1) * w.dilation[i] + 1 - in);
      // SAME_UPPER puts the odd padding at the end, SAME_LOWER at the beginning.
      const int64_t small = total / 2, big = total - total / 2;
      w.pad_begin[i] = auto_pad == "SAME_UPPER" ? small : big;
      w.pad_end[i] = auto_pad == "SAME_UPPER" ? big : small;
    }
  } else {
    throw attr_error(n, "auto_pad",
                     cat("is \"", auto_pad, "\" (NOTSET, VALID, SAME_UPPER or SAME_LOWER)"));
  }
  return w;
}

void apply(Attrs& a, const Window& w) {
  a.kernel = w.kernel;
  a.stride = w.stride;
  a.dilation = w.dilation;
  a.padding = w.pad_begin;
  a.padding_end = w.pad_end;
}

// ONNX's output extent (opsets 9 to 17: no rule keeping the last window inside the input).
int64_t onnx_window_out(int64_t in, int64_t k, int64_t s, int64_t pb, int64_t pe, int64_t d,
                        bool ceil_mode, bool same) {
  if (same) return (in + s - 1) / s;
  const int64_t span = in + pb + pe - ((k - 1) * d + 1);
  if (span < 0) return 0;
  return (ceil_mode ? (span + s - 1) / s : span / s) + 1;
}

void check_extent(const onnx::NodeProto& n, const Converter& c, int layer, const Shape& x,
                  const Window& w, bool ceil_mode) {
  const Shape y = c.model.nodes[layer].shape;
  for (int i = 0; i < 2; ++i) {
    const int64_t want = onnx_window_out(x[2 + i], w.kernel[i], w.stride[i], w.pad_begin[i],
                                         w.pad_end[i], w.dilation[i], ceil_mode, w.same);
    if (y[2 + i] != want)
      throw attr_error(n, "ceil_mode",
                       cat("= ", int(ceil_mode), " gives ONNX an output extent of ", want,
                           " along axis ", 2 + i, ", kiln's (PyTorch's) window rule gives ",
                           y[2 + i], ": the last window would start in the padding"));
  }
}

// A zero Pad that only conv node n reads, added just before it: its padding joins the conv's
// window and the pad layer goes (the conv reads the pad's input). Returns the conv's input.
int fold_zero_pad(Converter& c, const onnx::NodeProto& n, int x, Window& w) {
  if (w.same || x < 0 || x != int(c.model.nodes.size()) - 1) return x;
  const Node& p = c.model.nodes[size_t(x)];
  if (p.op != OpKind::pad || PadMode(p.attrs.mode) != PadMode::constant || p.attrs.value != 0)
    return x;
  const auto u = c.uses.find(n.input(0));
  if (u == c.uses.end() || u->second != 1) return x;
  const Int2 end = padding_end(p.attrs);
  for (int i = 0; i < 2; ++i) {
    w.pad_begin[i] += p.attrs.padding[i];
    w.pad_end[i] += end[i];
  }
  const int source = p.inputs[0];
  c.model.nodes.pop_back();
  ++c.dropped;
  return source;
}

} // namespace

void convert_conv(Converter& c, const onnx::NodeProto& n) {
  const NodeAttrs at(n, {"kernel_shape", "strides", "pads", "dilations", "group", "auto_pad"});
  int x = c.activation(n, 0);
  const Tensor& weight = c.constant(n, 1, "W");
  if (weight.shape().size() != 4)
    throw Error("", node_label(n),
                cat("weight has shape ", shape_str(weight.shape()),
                    "; kiln imports 2-D convolutions only (a 4-D weight)"));
  Window w = read_window(n, at, c.shape_of(x), {weight.shape()[2], weight.shape()[3]});
  x = fold_zero_pad(c, n, x, w);
  const Shape xs = c.shape_of(x);
  Attrs a;
  apply(a, w);
  a.out_channels = weight.shape()[0];
  a.groups = at.get_int("group", 1);
  if (a.groups <= 0) throw attr_error(n, "group", "must be positive");
  if (weight.shape()[1] * a.groups != xs[1])
    throw Error("", node_label(n),
                cat("weight has shape ", shape_str(weight.shape()), " but the input has ", xs[1],
                    " channels in ", a.groups, " group(s)"));
  a.bias = c.has_input(n, 2);
  if (a.bias && c.constant(n, 2, "B").shape() != Shape{a.out_channels})
    throw Error("", node_label(n),
                cat("bias has shape ", shape_str(c.constant(n, 2, "B").shape()), ", expected [",
                    a.out_channels, "]"));
  const int layer = c.add_layer(n, OpKind::conv2d, a, {x}, n.input(1));
  check_extent(n, c, layer, xs, w, false);
  c.add_param(layer, "weight", weight);
  if (a.bias) c.add_param(layer, "bias", c.constant(n, 2, "B"));
}

// ConvTranspose: kiln's conv_transpose2d. Padding (pads, or what output_shape / auto_pad
// imply) becomes its symmetric padding plus the output_padding that gives the same extent:
// pads (b, e) with output_padding a equal padding b with output_padding a + b - e, which must
// lie in [0, stride).
void convert_conv_transpose(Converter& c, const onnx::NodeProto& n) {
  const NodeAttrs at(n, {"kernel_shape", "strides", "pads", "dilations", "group", "auto_pad",
                         "output_padding", "output_shape"});
  const int x = c.activation(n, 0);
  const Tensor& weight = c.constant(n, 1, "W");
  const Shape xs = c.shape_of(x);
  if (weight.shape().size() != 4 || xs.size() != 4)
    throw Error("", node_label(n),
                cat("weight has shape ", shape_str(weight.shape()), ", input ", shape_str(xs),
                    "; kiln imports 2-D transposed convolutions only"));
  Attrs a;
  a.groups = at.get_int("group", 1);
  if (a.groups <= 0) throw attr_error(n, "group", "must be positive");
  if (weight.shape()[0] != xs[1])
    throw Error("", node_label(n),
                cat("weight has shape ", shape_str(weight.shape()), " but the input has ", xs[1],
                    " channels"));
  a.out_channels = weight.shape()[1] * a.groups;
  a.kernel = pair(n, at, "kernel_shape", {weight.shape()[2], weight.shape()[3]});
  if (a.kernel != Int2{weight.shape()[2], weight.shape()[3]})
    throw attr_error(n, "kernel_shape", "disagrees with the weight's shape");
  a.stride = pair(n, at, "strides", {1, 1});
  a.dilation = pair(n, at, "dilations", {1, 1});
  const Int2 adj = pair(n, at, "output_padding", {0, 0});
  for (int i = 0; i < 2; ++i)
    if (a.stride[i] <= 0 || a.dilation[i] <= 0)
      throw attr_error(n, a.stride[i] <= 0 ? "strides" : "dilations", "must be positive");
  const std::string auto_pad = at.get_string("auto_pad", "NOTSET");
  Int2 begin{0, 0}, end{0, 0};
  const auto out_shape = at.get_ints("output_shape");
  if (out_shape || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    if (out_shape && out_shape->size() != 2 && out_shape->size() != 4)
      throw attr_error(n, "output_shape", cat("has ", out_shape->size(), " values, expected 2"));
    for (int i = 0; i < 2; ++i) {
      const int64_t full =
          (xs[size_t(2 + i)] - 1) * a.stride[i] + adj[i] + (a.kernel[i] - 1) * a.dilation[i] + 1;
      const int64_t want = out_shape ? (*out_shape)[out_shape->size() - 2 + size_t(i)]
                                     : xs[size_t(2 + i)] * a.stride[i];
      const int64_t total = full - want;
      // The spec and ONNX Runtime split an odd total differently: kiln takes neither.
      if (total < 0 || total % 2 != 0)
        throw attr_error(n, out_shape ? "output_shape" : "auto_pad",
                         cat("asks for ", want, " outputs along axis ", 2 + i, " of ", full,
                             ": kiln supports an even, non-negative difference only"));
      begin[i] = end[i] = total / 2;
    }
  } else if (auto_pad == "NOTSET") {
    const auto pads = at.get_ints("pads").value_or(std::vector<int64_t>{0, 0, 0, 0});
    if (pads.size() != 4)
      throw attr_error(n, "pads", cat("has ", pads.size(), " values, expected 4 (2-D)"));
    for (int64_t p : pads)
      if (p < 0) throw attr_error(n, "pads", "must not be negative");
    begin = {pads[0], pads[1]};
    end = {pads[2], pads[3]};
  } else if (auto_pad != "VALID") {
    throw attr_error(n, "auto_pad",
                     cat("is \"", auto_pad, "\" (NOTSET, VALID, SAME_UPPER or SAME_LOWER)"));
  }
  a.padding = begin;
  for (int i = 0; i < 2; ++i) {
    a.output_padding[i] = adj[i] + begin[i] - end[i];
    if (a.output_padding[i] < 0 || a.output_padding[i] >= a.stride[i])
      throw attr_error(n, "output_padding",
                       cat("with pads ", begin[i], " and ", end[i], " along axis ", 2 + i, " is ",
                           a.output_padding[i],
                           " past the symmetric padding; kiln supports [0, stride ", a.stride[i],
                           ")"));
  }
  a.bias = c.has_input(n, 2);
  if (a.bias && c.constant(n, 2, "B").shape() != Shape{a.out_channels})
    throw Error("", node_label(n),
                cat("bias has shape ", shape_str(c.constant(n, 2, "B").shape()), ", expected [",
                    a.out_channels, "]"));
  const int layer = c.add_layer(n, OpKind::conv_transpose2d, a, {x}, n.input(1));
  c.add_param(layer, "weight", weight);
  if (a.bias) c.add_param(layer, "bias", c.constant(n, 2, "B"));
}

void convert_max_pool(Converter& c, const onnx::NodeProto& n) {
  const NodeAttrs at(n, {"kernel_shape", "strides", "pads", "dilations", "auto_pad", "ceil_mode",
                         "storage_order"});
  c.require_unused_outputs(n, 1); // Indices (storage_order only affects them)
  const int x = c.activation(n, 0);
  const Window w = read_window(n, at, c.shape_of(x), {0, 0});
  if (w.dilation != Int2{1, 1})
    throw attr_error(
        n, "dilations",
        cat("= [", w.dilation[0], ", ", w.dilation[1], "]: kiln's maxpool2d has no dilation"));
  Attrs a;
  apply(a, w);
  a.ceil_mode = at.get_int("ceil_mode", 0) != 0;
  const int layer = c.add_layer(n, OpKind::maxpool2d, a, {x});
  check_extent(n, c, layer, c.shape_of(x), w, a.ceil_mode);
}

void convert_average_pool(Converter& c, const onnx::NodeProto& n) {
  const NodeAttrs at(n, {"kernel_shape", "strides", "pads", "auto_pad", "ceil_mode",
                         "count_include_pad", "dilations"});
  const int x = c.activation(n, 0);
  const Window w = read_window(n, at, c.shape_of(x), {0, 0});
  if (w.dilation != Int2{1, 1})
    throw attr_error(n, "dilations", "is not [1, 1]: kiln's avgpool2d has no dilation");
  Attrs a;
  apply(a, w);
  a.ceil_mode = at.get_int("ceil_mode", 0) != 0;
  a.count_include_pad = at.get_int("count_include_pad", 0) != 0; // ONNX's default: exclude
  const int layer = c.add_layer(n, OpKind::avgpool2d, a, {x});
  check_extent(n, c, layer, c.shape_of(x), w, a.ceil_mode);
}

void convert_global_average_pool(Converter& c, const onnx::NodeProto& n) {
  const NodeAttrs at(n, {});
  const int x = c.activation(n, 0);
  if (c.shape_of(x).size() != 4)
    throw Error("", node_label(n),
                cat("input has shape ", shape_str(c.shape_of(x)), "; kiln pools [N, C, H, W]"));
  c.add_layer(n, OpKind::global_avgpool, {}, {x});
}

} // namespace kiln::onnx_import
