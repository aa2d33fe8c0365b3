// Flatten, Reshape, Squeeze, Unsqueeze, Concat, Resize / Upsample. On activations they map
// to kiln's flatten, concat and upsample2d (or to nothing, when the shape is unchanged);
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
void reshape_activation(Converter& c, const onnx::NodeProto& n, int x, const Shape& target) {
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
              cat("reshapes ", shape_str(s), " to ", shape_str(target),
                  ": kiln reshapes activations only to [N, features] (a flatten before a "
                  "classifier)"));
}

std::vector<int64_t> axes_of(Converter& c, const onnx::NodeProto& n, const NodeAttrs& at) {
  if (c.opset < 13) return at.get_ints("axes").value_or(std::vector<int64_t>{});
  if (!c.has_input(n, 1)) return {};
  return const_ints(n, c.constant(n, 1, "axes"), "axes");
}

Shape value_shape(const Converter& c, const Value& v) {
  return v.is_const ? v.constant.shape() : c.shape_of(v.ref);
}

void set_shape(Converter& c, const onnx::NodeProto& n, const Value& v, const Shape& target) {
  if (v.is_const) return c.set_const_output(n, v.constant.reshaped(target));
  reshape_activation(c, n, v.ref, target);
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

void convert_resize(Converter& c, const onnx::NodeProto& n) {
  const bool upsample = n.op_type() == "Upsample";
  // Opset 18 adds antialias (no effect on nearest), axes and keep_aspect_ratio_policy.
  const bool v18 = !upsample && c.opset >= 18;
  const NodeAttrs at(
      n,
      v18 ? std::initializer_list<std::string_view>{"mode", "coordinate_transformation_mode",
                                                    "nearest_mode", "cubic_coeff_a",
                                                    "exclude_outside", "extrapolation_value",
                                                    "antialias", "axes", "keep_aspect_ratio_policy"}
          : std::initializer_list<std::string_view>{
                "mode", "coordinate_transformation_mode", "nearest_mode", "cubic_coeff_a",
                "exclude_outside", "extrapolation_value", "scales"});
  const std::string mode = at.get_string("mode", "nearest");
  if (mode != "nearest")
    throw Error("", node_label(n),
                cat("attribute \"mode\" = \"", mode, "\": kiln's upsample2d is nearest neighbour"));
  const int x = c.activation(n, 0);
  const Shape s = c.shape_of(x);
  if (s.size() != 4)
    throw Error("", node_label(n),
                cat("input has shape ", shape_str(s), "; kiln upsamples [N, C, H, W]"));
  // The axes scales and sizes are given for (opset 18's axes; all four before).
  std::vector<int64_t> axes{0, 1, 2, 3};
  if (auto ax = at.get_ints("axes")) {
    axes.clear();
    for (int64_t a : *ax) {
      const int64_t k = a < 0 ? a + 4 : a;
      if (k < 0 || k > 3 || std::find(axes.begin(), axes.end(), k) != axes.end())
        throw Error("", node_label(n),
                    cat("attribute \"axes\" holds ", a, " (out of range or repeated)"));
      axes.push_back(k);
    }
  }
  // Scales per axis: from `scales`, or from `sizes` over the input's extent.
  std::vector<double> scales(4, 1.0), given;
  const int scales_at = upsample || c.opset < 11 ? 1 : 2;
  if (upsample && at.has("scales")) {
    const std::vector<float> attr = *at.get_floats("scales");
    for (float f : attr)
      given.push_back(f);
  } else if (c.has_input(n, scales_at) && c.constant(n, scales_at, "scales").numel() > 0) {
    const Tensor& t = c.constant(n, scales_at, "scales");
    for (int64_t i = 0; i < t.numel(); ++i)
      given.push_back(t.get(i));
  } else if (!upsample && c.opset >= 11 && c.has_input(n, 3)) {
    const std::vector<int64_t> sizes = const_ints(n, c.constant(n, 3, "sizes"), "sizes");
    if (sizes.size() != axes.size())
      throw Error("", node_label(n), cat("sizes must have ", axes.size(), " entries"));
    for (size_t i = 0; i < axes.size(); ++i)
      given.push_back(double(sizes[i]) / double(s[axes[i]]));
    // Opset 18: not_larger / not_smaller keep the aspect ratio with one scale for all axes.
    const std::string policy = at.get_string("keep_aspect_ratio_policy", "stretch");
    if (policy == "not_larger" || policy == "not_smaller") {
      double k = given[0];
      for (double g : given)
        k = policy == "not_larger" ? std::min(k, g) : std::max(k, g);
      for (size_t i = 0; i < axes.size(); ++i)
        given[i] = std::round(k * double(s[axes[i]])) / double(s[axes[i]]);
    } else if (policy != "stretch") {
      throw Error(
          "", node_label(n),
          cat("attribute \"keep_aspect_ratio_policy\" = \"", policy, "\" is not supported"));
    }
  } else {
    throw Error("", node_label(n), "neither scales nor sizes is given");
  }
  if (given.size() != axes.size())
    throw Error("", node_label(n),
                cat("scales has ", given.size(), " entries for ", axes.size(), " axes"));
  for (size_t i = 0; i < axes.size(); ++i)
    scales[axes[i]] = given[i];
  if (scales.size() != 4 || scales[0] != 1 || scales[1] != 1 || scales[2] != scales[3] ||
      scales[2] < 1 || scales[2] != std::floor(scales[2]) || scales[2] > 1024)
    throw Error("", node_label(n),
                cat("scales [", scales.size() > 0 ? scales[0] : 0, ", ",
                    scales.size() > 1 ? scales[1] : 0, ", ", scales.size() > 2 ? scales[2] : 0,
                    ", ", scales.size() > 3 ? scales[3] : 0,
                    "] are not supported: kiln's upsample2d scales height and width by the same "
                    "integer"));
  const int64_t k = int64_t(scales[2]);
  // Each output index must read input index floor(o / k), whatever the coordinate rule.
  const std::string coord = at.get_string("coordinate_transformation_mode",
                                          upsample || c.opset < 11 ? "asymmetric" : "half_pixel");
  const std::string rounding =
      at.get_string("nearest_mode", upsample || c.opset < 11 ? "floor" : "round_prefer_floor");
  if ((coord == "half_pixel_symmetric" && c.opset < 19) ||
      (coord == "tf_half_pixel_for_nn" && !upsample && c.opset >= 13))
    throw Error("", node_label(n),
                cat("attribute \"coordinate_transformation_mode\" = \"", coord,
                    "\" is not defined in opset ", c.opset));
  for (int axis = 2; axis < 4; ++axis) {
    const int64_t in = s[axis], out = in * k;
    // Bounded for untrusted sizes; a rule that differs does so within the first rows.
    for (int64_t o = 0; o < std::min<int64_t>(out, 1 << 16); ++o) {
      double src;
      if (coord == "half_pixel" || coord == "half_pixel_symmetric") // equal at integer scales
        src = (o + 0.5) / k - 0.5;
      else if (coord == "pytorch_half_pixel")
        src = out > 1 ? (o + 0.5) / k - 0.5 : 0;
      else if (coord == "asymmetric")
        src = double(o) / k;
      else if (coord == "tf_half_pixel_for_nn")
        src = (o + 0.5) / k;
      else if (coord == "align_corners")
        src = out == 1 ? 0 : double(o) * (in - 1) / double(out - 1);
      else
        throw Error(
            "", node_label(n),
            cat("attribute \"coordinate_transformation_mode\" = \"", coord, "\" is not supported"));
      int64_t i;
      const double f = std::floor(src), frac = src - f;
      if (rounding == "floor")
        i = int64_t(f);
      else if (rounding == "ceil")
        i = int64_t(std::ceil(src));
      else if (rounding == "round_prefer_floor")
        i = int64_t(frac <= 0.5 ? f : f + 1);
      else if (rounding == "round_prefer_ceil")
        i = int64_t(frac < 0.5 ? f : f + 1);
      else
        throw Error("", node_label(n),
                    cat("attribute \"nearest_mode\" = \"", rounding, "\" is not supported"));
      i = std::clamp<int64_t>(i, 0, in - 1);
      if (i != o / k)
        throw Error("", node_label(n),
                    cat("attributes \"coordinate_transformation_mode\" = \"", coord,
                        "\" and \"nearest_mode\" = \"", rounding, "\" at scale ", k, " read input ",
                        i, " for output ", o, "; kiln's upsample2d reads floor(o / scale)"));
    }
  }
  Attrs a;
  a.scale = k;
  c.add_layer(n, OpKind::upsample2d, a, {x});
}

} // namespace kiln::onnx_import
