// Flatten, Reshape, Squeeze, Unsqueeze, Concat. On activations they map to kiln's flatten and
// concat (or to nothing, when the shape is unchanged);
// on constants they are computed at import time.
#include "generator/model/onnx/node_attrs.hpp"
#include "generator/model/onnx/ops.hpp"
#include "generator/model/onnx/ops_channels.hpp"
#include "runtime/error.hpp"
#include "runtime/io/limits.hpp"

#include <algorithm>
#include <cmath>

namespace kiln::onnx_import {

namespace {

int64_t norm_axis(const onnx::NodeProto& n, int64_t axis, int64_t rank) {
  const int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank)
    throw Error("", node_label(n), cat("axis ", axis, " is out of range for rank ", rank));
  return a;
}

// An activation given a new shape: unchanged (no layer), or [N, ...] -> [N, features], which
// is kiln's flatten. Anything else kiln cannot express.
// `seen`: the shape ONNX gives x (a 1-D signal's [N, C, L]), for the message.
void reshape_activation(Converter& c, const onnx::NodeProto& n, int x, const Shape& target,
                        const Shape& seen) {
  const Shape s = c.shape_of(x);
  if (target == s) {
    Value v;
    v.ref = x;
    c.set_output(n, 0, v);
    ++c.dropped;
    return;
  }
  if (target.size() == 2 && s.size() >= 2 && target[0] == s[0] && target[1] == numel(s) / s[0]) {
    c.add_layer(n, OpKind::flatten, {}, {x});
    return;
  }
  throw Error("", node_label(n),
              cat("reshapes ", shape_str(seen), " to ", shape_str(target),
                  ": kiln reshapes activations only to [N, features] (a flatten before a "
                  "classifier)"));
}

std::vector<int64_t> axes_of(Converter& c, const onnx::NodeProto& n, const NodeAttrs& at) {
  if (c.opset < 13) return at.get_ints("axes").value_or(std::vector<int64_t>{});
  if (!c.has_input(n, 1)) return {};
  return const_ints(n, c.constant(n, 1, "axes"), "axes");
}

// A 1-D signal as ONNX sees it ([N, C, L]): its reshapes are ONNX's.
Shape value_shape(const Converter& c, const Value& v) {
  return v.is_const ? v.constant.shape() : v.signal ? onnx_shape(c, v) : c.shape_of(v.ref);
}

void set_shape(Converter& c, const onnx::NodeProto& n, const Value& v, const Shape& target) {
  if (v.is_const) return c.set_const_output(n, v.constant.reshaped(target));
  if (v.signal && target == onnx_shape(c, v)) { // a 1-D signal unchanged
    c.set_output(n, 0, v);
    ++c.dropped;
    return;
  }
  reshape_activation(c, n, v.ref, target, value_shape(c, v));
}

} // namespace

void convert_flatten(Converter& c, const onnx::NodeProto& n) {
  const NodeAttrs at(n, {"axis"});
  const Value& v = c.input(n, 0);
  const Shape s = value_shape(c, v);
  const int64_t rank = int64_t(s.size());
  const int64_t axis0 = at.get_int("axis", 1);
  const int64_t axis = axis0 < 0 ? axis0 + rank : axis0;
  if (axis < 0 || axis > rank)
    throw Error("", node_label(n), cat("attribute \"axis\" = ", axis0, " is out of range"));
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= s[d];
  const Shape target{outer, numel(s) / std::max<int64_t>(outer, 1)};
  if (!v.is_const && axis != 1)
    throw Error(
        "", node_label(n),
        cat("attribute \"axis\" = ", axis0,
            " is not supported on activations: kiln flattens [N, ...] to [N, features] (axis 1)"));
  set_shape(c, n, v, target);
}

void convert_reshape(Converter& c, const onnx::NodeProto& n) {
  const NodeAttrs at(n, {"allowzero"});
  const Value& v = c.input(n, 0);
  const Shape s = onnx_shape(c, v);
  const std::vector<int64_t> want = const_ints(n, c.constant(n, 1, "shape"), "shape");
  const bool allow_zero = at.get_int("allowzero", 0) != 0;
  Shape target;
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < want.size(); ++i) {
    int64_t d = want[i];
    if (d == 0 && !allow_zero) {
      if (i >= s.size())
        throw Error("", node_label(n), cat("shape copies axis ", i, " the input lacks"));
      d = s[i];
    }
    if (d == -1) {
      if (infer >= 0) throw Error("", node_label(n), "shape has two -1 entries");
      infer = int64_t(i);
      d = 1;
    } else if (d < 0) {
      throw Error("", node_label(n), cat("shape holds ", d));
    } else if (d > 0 && known > io::max_elements / d) {
      throw Error("", node_label(n), "shape is absurdly large");
    }
    known *= d;
    target.push_back(d);
  }
  const int64_t total = numel(s);
  if (infer >= 0) {
    if (known == 0 || total % known != 0)
      throw Error("", node_label(n), cat("cannot reshape ", shape_str(s), " to ", shape_str(want)));
    target[infer] = total / known;
  } else if (known != total) {
    throw Error("", node_label(n), cat("cannot reshape ", shape_str(s), " to ", shape_str(want)));
  }
  if (!v.is_const && reshape_groups(c, n, v, target)) return; // a channel shuffle
  set_shape(c, n, v, target);
}

void convert_squeeze(Converter& c, const onnx::NodeProto& n) {
  const NodeAttrs at(n, {"axes"});
  const Value& v = c.input(n, 0);
  const Shape s = value_shape(c, v);
  const int64_t rank = int64_t(s.size());
  std::vector<int64_t> axes = axes_of(c, n, at);
  std::vector<bool> drop(rank, false);
  if (axes.empty()) {
    for (int64_t d = 0; d < rank; ++d)
      drop[d] = s[d] == 1;
    // Squeezing every 1 would take the batch axis too when the batch is 1.
    if (!v.is_const && rank > 0) drop[0] = false;
  }
  for (int64_t a : axes) {
    const int64_t k = norm_axis(n, a, rank);
    if (s[k] != 1) throw Error("", node_label(n), cat("axis ", a, " has size ", s[k], ", not 1"));
    if (!v.is_const && k == 0)
      throw Error("", node_label(n), "squeezes the batch axis 0: kiln keeps the batch axis");
    drop[k] = true;
  }
  Shape target;
  for (int64_t d = 0; d < rank; ++d)
    if (!drop[d]) target.push_back(s[d]);
  set_shape(c, n, v, target);
}

void convert_unsqueeze(Converter& c, const onnx::NodeProto& n) {
  const NodeAttrs at(n, {"axes"});
  const Value& v = c.input(n, 0);
  const Shape s = value_shape(c, v);
  const std::vector<int64_t> axes = axes_of(c, n, at);
  const int64_t rank = int64_t(s.size() + axes.size());
  std::vector<bool> inserted(rank, false);
  for (int64_t a : axes) {
    const int64_t k = norm_axis(n, a, rank);
    if (inserted[k]) throw Error("", node_label(n), cat("axis ", a, " is repeated"));
    inserted[k] = true;
  }
  Shape target;
  size_t j = 0;
  for (int64_t d = 0; d < rank; ++d)
    target.push_back(inserted[d] ? 1 : s.at(j++));
  set_shape(c, n, v, target);
}

void convert_concat(Converter& c, const onnx::NodeProto& n) {
  const NodeAttrs at(n, {"axis"});
  if (!at.has("axis")) throw Error("", node_label(n), "attribute \"axis\" is missing");
  const int64_t axis = at.get_int("axis", 1);
  if (c.all_inputs_const(n)) {
    std::vector<const Tensor*> parts;
    for (int i = 0; i < n.input_size(); ++i)
      if (c.has_input(n, i)) parts.push_back(&c.constant(n, i, "input"));
    if (parts.empty()) throw Error("", node_label(n), "has no inputs");
    return c.set_const_output(n, concat_constants(n, parts, axis));
  }
  std::vector<int> refs;
  for (int i = 0; i < n.input_size(); ++i)
    if (c.has_input(n, i)) refs.push_back(c.activation(n, i, "input"));
  const int64_t rank = int64_t(c.shape_of(refs[0]).size());
  if (norm_axis(n, axis, rank) != 1)
    throw Error("", node_label(n),
                cat("attribute \"axis\" = ", axis, ": kiln concatenates along channels (axis 1)"));
  if (refs.size() == 1) {
    Value v;
    v.ref = refs[0];
    c.set_output(n, 0, v);
    ++c.dropped;
    return;
  }
  c.add_layer(n, OpKind::concat, {}, refs);
}

} // namespace kiln::onnx_import
