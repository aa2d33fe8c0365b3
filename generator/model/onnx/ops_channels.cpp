#include "generator/model/onnx/ops_channels.hpp"

#include "generator/model/onnx/node_attrs.hpp"
#include "runtime/error.hpp"

#include <algorithm>
#include <optional>

namespace kiln::onnx_import {

namespace {

// One channel_slice layer for output `out` of n (a view of x when it takes every channel).
void slice_output(Converter& c, const onnx::NodeProto& n, int out, int x, int64_t begin,
                  int64_t end) {
  const int64_t ch = c.shape_of(x)[1];
  if (begin == 0 && end == ch) {
    Value v;
    v.ref = x;
    c.set_output(n, out, v);
    return;
  }
  Attrs a;
  a.begin = begin;
  a.end = end;
  if (out == 0) return void(c.add_layer(n, OpKind::channel_slice, a, {x}));
  // add_layer sets output 0: a later output's layer puts output 0 back as it was.
  const auto it = c.values.find(n.output(0));
  const std::optional<Value> first =
      it == c.values.end() ? std::nullopt : std::optional<Value>(it->second);
  const int layer = c.add_layer(n, OpKind::channel_slice, a, {x});
  if (first)
    c.values[n.output(0)] = *first;
  else
    c.values.erase(n.output(0));
  Value v;
  v.ref = layer;
  c.set_output(n, out, v);
}

} // namespace

Shape onnx_shape(const Converter& c, const Value& v) {
  if (v.is_const) return v.constant.shape();
  const Shape s = c.shape_of(v.ref);
  if (v.groups > 0) {
    const int64_t g = v.groups_transposed ? s[1] / v.groups : v.groups;
    return {s[0], g, s[1] / g, s[2], s[3]};
  }
  if (v.channels_last) return {s[0], s[2], s[3], s[1]};
  if (v.flat) return {numel(s)};
  if (v.signal) return {s[0], s[1], s[2]};
  return s;
}

void refuse_grouped_reader(const Converter& c, const onnx::NodeProto& n) {
  for (int i = 0; i < n.input_size(); ++i) {
    if (!c.has_input(n, i)) continue;
    const Value& v = c.raw_input(n, i);
    if (!v.is_const && v.flat && n.op_type() != "Gather")
      throw Error("", node_label(n),
                  cat("reads an activation reshaped to 1-D ", shape_str(onnx_shape(c, v)),
                      ": kiln keeps the batch axis; it maps a 1-D reshape only when a Gather of "
                      "every element in order (as_strided) gives the activation back"));
    if (n.op_type() == "Transpose" || n.op_type() == "Reshape") continue;
    if (!v.is_const && v.groups > 0)
      throw Error("", node_label(n),
                  cat("reads the 5-D view ", shape_str(onnx_shape(c, v)),
                      " of a channel shuffle: kiln maps Reshape to [N, g, C/g, H, W], "
                      "Transpose(0, 2, 1, 3, 4) and Reshape back to [N, C, H, W] as one "
                      "channel shuffle, with nothing else reading the 5-D tensor"));
  }
}

bool reshape_groups(Converter& c, const onnx::NodeProto& n, const Value& v, const Shape& target) {
  const Shape s = c.shape_of(v.ref);
  if (v.groups > 0) {
    if (target != s)
      throw Error("", node_label(n),
                  cat("reshapes the 5-D view ", shape_str(onnx_shape(c, v)), " to ",
                      shape_str(target), ": a channel shuffle reshapes back to ", shape_str(s)));
    if (!v.groups_transposed) { // reshaped there and back: nothing happened
      Value out;
      out.ref = v.ref;
      c.set_output(n, 0, out);
      ++c.dropped;
      return true;
    }
    Attrs a;
    a.groups = v.groups;
    c.add_layer(n, OpKind::channel_shuffle, a, {v.ref});
    return true;
  }
  if (target.size() == 1 && target[0] == numel(s) && s.size() > 1) { // as_strided's first half
    Value out;
    out.ref = v.ref;
    out.flat = true;
    c.set_output(n, 0, out);
    ++c.dropped;
    return true;
  }
  if (s.size() != 4 || target.size() != 5 || target[0] != s[0] || target[3] != s[2] ||
      target[4] != s[3] || target[1] * target[2] != s[1])
    return false;
  Value out;
  out.ref = v.ref;
  out.groups = target[1];
  c.set_output(n, 0, out);
  ++c.dropped;
  return true;
}

void transpose_groups(Converter& c, const onnx::NodeProto& n, const Value& v,
                      const std::vector<int64_t>& perm) {
  if (perm != std::vector<int64_t>{0, 2, 1, 3, 4})
    throw Error("", node_label(n),
                cat("Transpose of the 5-D view ", shape_str(onnx_shape(c, v)),
                    ": a channel shuffle transposes axes 1 and 2 (perm [0, 2, 1, 3, 4])"));
  Value out = v;
  out.groups_transposed = !v.groups_transposed;
  c.set_output(n, 0, out);
  ++c.dropped;
}

void gather_flat(Converter& c, const onnx::NodeProto& n, const Value& v) {
  const NodeAttrs at(n, {"axis"});
  const Tensor& idx_t = c.constant(n, 1, "indices");
  const Shape s = c.shape_of(v.ref);
  bool in_order = at.get_int("axis", 0) == 0 && idx_t.shape() == s;
  if (in_order) {
    const std::vector<int64_t> idx = const_ints(n, idx_t, "indices");
    for (size_t i = 0; in_order && i < idx.size(); ++i)
      in_order = idx[i] == int64_t(i);
  }
  if (!in_order)
    throw Error("", node_label(n),
                cat("gathers from an activation reshaped to 1-D: kiln maps only a Gather of "
                    "every element in order into the activation's shape ",
                    shape_str(s), " (the exporter's as_strided of a contiguous tensor)"));
  Value out;
  out.ref = v.ref;
  c.set_output(n, 0, out);
  ++c.dropped;
}

void slice_activation(Converter& c, const onnx::NodeProto& n, int x, std::vector<int64_t> starts,
                      std::vector<int64_t> ends, std::vector<int64_t> axes,
                      std::vector<int64_t> steps) {
  const Shape s = c.shape_of(x);
  const int64_t rank = int64_t(s.size());
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i)
      axes.push_back(int64_t(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    throw Error("", node_label(n), "starts, ends, axes and steps differ in length");
  int64_t begin = 0, end = s[1];
  for (size_t i = 0; i < starts.size(); ++i) {
    const int64_t ax = axes[i] < 0 ? axes[i] + rank : axes[i];
    if (ax < 0 || ax >= rank)
      throw Error("", node_label(n), cat("axis ", axes[i], " is out of range for rank ", rank));
    const int64_t dim = s[size_t(ax)];
    const auto clampi = [&](int64_t v) { return std::clamp(v < 0 ? v + dim : v, int64_t(0), dim); };
    const int64_t b = clampi(starts[i]), e = clampi(ends[i]);
    const bool whole = b == 0 && e == dim && steps[i] == 1;
    if (ax == 1 && steps[i] == 1 && e > b) {
      begin = b;
      end = e;
    } else if (!whole) {
      throw Error("", node_label(n),
                  cat("slices axis ", axes[i], " of an activation ", shape_str(s), " (step ",
                      steps[i],
                      "): kiln slices activations along the channel axis 1 only, with step 1 "
                      "and a nonempty range"));
    }
  }
  slice_output(c, n, 0, x, begin, end);
}

void convert_split(Converter& c, const onnx::NodeProto& n) {
  const NodeAttrs at(n, {"axis", "split", "num_outputs"});
  const int x = c.activation(n, 0, "input");
  const Shape s = c.shape_of(x);
  const int64_t rank = int64_t(s.size());
  const int64_t axis0 = at.get_int("axis", 0), axis = axis0 < 0 ? axis0 + rank : axis0;
  if (axis != 1)
    throw Error("", node_label(n),
                cat("splits axis ", axis0, " of an activation ", shape_str(s),
                    ": kiln splits activations along the channel axis 1 only"));
  std::vector<int64_t> parts;
  if (c.opset >= 13 && c.has_input(n, 1))
    parts = const_ints(n, c.constant(n, 1, "split"), "split");
  else if (c.opset < 13 && at.has("split"))
    parts = *at.get_ints("split");
  const int outs = n.output_size();
  if (parts.empty()) { // equal parts; opset 18's num_outputs lets the last be smaller
    const int64_t k = at.get_int("num_outputs", outs);
    if (k != outs)
      throw Error("", node_label(n), cat("num_outputs is ", k, " but the node has ", outs));
    const int64_t each = (s[1] + k - 1) / k;
    for (int64_t i = 0; i < k; ++i)
      parts.push_back(std::min(each, s[1] - i * each));
  }
  int64_t total = 0;
  for (int64_t p : parts)
    total += p;
  if (int64_t(parts.size()) != outs || total != s[1] ||
      std::any_of(parts.begin(), parts.end(), [](int64_t p) { return p <= 0; }))
    throw Error("", node_label(n),
                cat("split into ", parts.size(), " parts summing to ", total, " for ", outs,
                    " outputs of ", s[1], " channels"));
  int64_t at_channel = 0;
  for (int i = 0; i < outs; ++i) {
    slice_output(c, n, i, x, at_channel, at_channel + parts[size_t(i)]);
    at_channel += parts[size_t(i)];
  }
}

} // namespace kiln::onnx_import
