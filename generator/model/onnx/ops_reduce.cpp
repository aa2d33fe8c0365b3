// ReduceSum, ReduceMean and ReduceMax over any non-empty set of the axes C, H, W of
// [N, C, H, W] (C of [N, C]): kiln's reduce_sum / reduce_mean / reduce_max, with keepdims
// either way (the output rank ONNX gives). ReduceMean and ReduceMax over exactly H and W of
// [N, C, H, W] stay global pools (global_avgpool, maxpool2d over the whole image, then a
// flatten without keepdims): those kernels are faster. Axes are an attribute up to opset 12
// (ReduceSum) or 17 (ReduceMean, ReduceMax) and an input after, with noop_with_empty_axes
// (no axes: the input unchanged). Negative axes count from the end; no axes (without noop)
// means every axis, the batch axis included: refused, as is any set naming N. Inside a
// channels-last region the axes are those of [N, H, W, C] (ConvNeXt-style heads); of a 1-D
// signal [N, C, L] (signal.hpp) they are C and L, L being H and W of kiln's [N, C, L, 1].
#include "generator/model/onnx/node_attrs.hpp"
#include "generator/model/onnx/ops.hpp"
#include "runtime/error.hpp"

#include <algorithm>

namespace kiln::onnx_import {

namespace {

std::string axes_str(const std::vector<int64_t>& axes) {
  if (axes.empty()) return "all";
  std::string r;
  for (int64_t a : axes)
    r += (r.empty() ? "" : ", ") + std::to_string(a);
  return r;
}

// The node under another name and output, for a layer before the node's own.
onnx::NodeProto renamed(const onnx::NodeProto& n, const std::string& suffix) {
  onnx::NodeProto r = n;
  r.set_name(n.name().empty() ? "" : n.name() + suffix);
  r.set_output(0, n.output(0) + suffix);
  return r;
}

void convert_reduce(Converter& c, const onnx::NodeProto& n, OpKind op, int axes_input_from) {
  const bool as_input = c.opset >= axes_input_from;
  const NodeAttrs at(
      n, as_input ? std::initializer_list<std::string_view>{"keepdims", "noop_with_empty_axes"}
                  : std::initializer_list<std::string_view>{"axes", "keepdims"});
  const int x = c.activation(n, 0);
  const bool last = c.channels_last(n, 0);
  const bool signal = c.raw_input(n, 0).signal;
  const Shape s = c.shape_of(x);
  const int64_t rank = signal ? 3 : int64_t(s.size());
  // ONNX's axis a of [N, H, W, C] is kiln's axis of [N, C, H, W].
  const auto kiln_axis = [&](int64_t a) { return !last ? a : a == 0 ? 0 : a == 3 ? 1 : a + 1; };
  std::vector<int64_t> axes;
  if (!as_input)
    axes = at.get_ints("axes").value_or(std::vector<int64_t>{});
  else if (c.has_input(n, 1))
    axes = const_ints(n, c.constant(n, 1, "axes"), "axes");
  if (axes.empty() && as_input && at.get_int("noop_with_empty_axes", 0) != 0) {
    c.set_output(n, 0, c.raw_input(n, 0)); // reduces nothing: the input itself
    ++c.dropped;
    return;
  }
  const int64_t keep = at.get_int("keepdims", 1);
  if (keep != 0 && keep != 1)
    throw Error("", node_label(n), cat("keepdims is ", keep, ": expected 0 or 1"));
  std::vector<int64_t> norm;
  for (int64_t a : axes) {
    if (a < -rank || a >= rank)
      throw Error("", node_label(n),
                  cat("axis ", a, " is out of range for ", shape_str(s), " (rank ", rank, ")"));
    norm.push_back(kiln_axis(a < 0 ? a + rank : a));
    // L of a 1-D signal [N, C, L] is H of kiln's [N, C, L, 1]; W (1) goes with it.
    if (signal && norm.back() == 2) norm.push_back(3);
  }
  std::sort(norm.begin(), norm.end());
  if (std::adjacent_find(norm.begin(), norm.end()) != norm.end())
    throw Error("", node_label(n), cat("axes [", axes_str(axes), "] name an axis twice"));
  const bool fits = (s.size() == 4 || s.size() == 2) && !norm.empty() && norm[0] >= 1;
  if (!fits)
    throw Error("", node_label(n),
                cat("reduces axes [", axes_str(axes), "] of ", shape_str(s),
                    last     ? " (seen channels-last: the axes of [N, H, W, C])"
                    : signal ? " (a 1-D signal [N, C, L])"
                             : "",
                    ": kiln imports ", n.op_type(),
                    " over any of C, H, W of [N, C, H, W], C, L of [N, C, L] or C of [N, C], "
                    "never N"));
  if (op != OpKind::reduce_sum && s.size() == 4 && norm == std::vector<int64_t>{2, 3}) {
    Attrs a; // a global pool: the whole image as one window
    a.kernel = {s[2], s[3]};
    a.stride = {s[2], s[3]};
    const OpKind pool = op == OpKind::reduce_mean ? OpKind::global_avgpool : OpKind::maxpool2d;
    if (pool == OpKind::global_avgpool) a = {};
    if (keep) return void(c.add_layer(n, pool, a, {x}));
    // [N, C] without the unit axes: the pool, then kiln's flatten under the node's name.
    const int g = c.add_layer(renamed(n, ".pool"), pool, a, {x});
    c.add_layer(n, OpKind::flatten, {}, {g});
    return;
  }
  Attrs a;
  for (int64_t d : norm)
    (d == 1 ? a.reduce_c : d == 2 ? a.reduce_h : a.reduce_w) = true;
  a.keepdims = keep != 0;
  if (signal && !keep && norm == std::vector<int64_t>{1}) {
    // [N, C, L] over C without keepdims is ONNX's [N, L]: kiln's [N, 1, L, 1], flattened.
    a.keepdims = true;
    const int r = c.add_layer(renamed(n, ".reduce"), op, a, {x});
    c.add_layer(n, OpKind::flatten, {}, {r});
    return;
  }
  c.add_layer(n, op, a, {x});
}

} // namespace

void convert_reduce_sum(Converter& c, const onnx::NodeProto& n) {
  convert_reduce(c, n, OpKind::reduce_sum, 13);
}
void convert_reduce_mean(Converter& c, const onnx::NodeProto& n) {
  convert_reduce(c, n, OpKind::reduce_mean, 18);
}
void convert_reduce_max(Converter& c, const onnx::NodeProto& n) {
  convert_reduce(c, n, OpKind::reduce_max, 18);
}

} // namespace kiln::onnx_import
