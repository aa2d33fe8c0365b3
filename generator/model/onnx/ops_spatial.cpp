// Resize (opsets 10 to 21) and Upsample (9): kiln's resize, nearest or bilinear over H and W,
// with the coordinate rules PyTorch's exporter writes. What resize cannot compute exactly
// (cubic, tf_crop_and_resize, antialiased downscaling, resizing N or C) is refused by name.
// Pad: kiln's pad (constant, reflect, edge over H and W); a zero pad read only by a Conv
// folds into the conv's padding (convert_conv).
// SpaceToDepth (opsets 1 and 13): kiln's space_to_depth with factor = blocksize, on H and W
// that are multiples of it (kiln's padding and size attributes have no ONNX counterpart).
#include "generator/model/onnx/node_attrs.hpp"
#include "generator/model/onnx/ops.hpp"
#include "runtime/error.hpp"

#include <algorithm>
#include <cmath>

namespace kiln::onnx_import {

namespace {

Error bad_attr(const onnx::NodeProto& n, std::string_view name, const std::string& value,
               std::string_view why) {
  return Error("", node_label(n), cat("attribute \"", name, "\" = \"", value, "\" ", why));
}

// The axes scales and sizes are given for (opset 18's axes; all four before).
std::vector<int64_t> resize_axes(const onnx::NodeProto& n, const NodeAttrs& at) {
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
  return axes;
}

} // namespace

void convert_resize(Converter& c, const onnx::NodeProto& n) {
  const bool upsample = n.op_type() == "Upsample";
  const bool old = upsample || c.opset < 11; // no coordinate rule, no nearest_mode
  // Opset 18 adds antialias, axes and keep_aspect_ratio_policy.
  const bool v18 = !upsample && c.opset >= 18;
  const NodeAttrs at(
      n,
      v18   ? std::initializer_list<std::string_view>{"mode", "coordinate_transformation_mode",
                                                      "nearest_mode", "cubic_coeff_a",
                                                      "exclude_outside", "extrapolation_value",
                                                      "antialias", "axes", "keep_aspect_ratio_policy"}
      : old ? std::initializer_list<std::string_view>{"mode", "scales"}
            : std::initializer_list<std::string_view>{"mode", "coordinate_transformation_mode",
                                                      "nearest_mode", "cubic_coeff_a",
                                                      "exclude_outside", "extrapolation_value"});
  Attrs a;
  const std::string mode = at.get_string("mode", "nearest");
  if (mode == "nearest")
    a.mode = int64_t(ResizeMode::nearest);
  else if (mode == "linear" || (upsample && mode == "bilinear"))
    a.mode = int64_t(ResizeMode::linear);
  else
    throw bad_attr(n, "mode", mode, "is not supported: kiln's resize is nearest or linear");
  const int x = c.activation(n, 0);
  const Shape s = c.shape_of(x);
  if (s.size() != 4)
    throw Error("", node_label(n),
                cat("input has shape ", shape_str(s), "; kiln resizes [N, C, H, W]"));
  const std::vector<int64_t> axes = resize_axes(n, at);

  // Per axis: the output extent and the scale the coordinate rule divides by (ONNX: the
  // given scale; out / in where sizes are given, which resize's scale 0 means).
  std::vector<double> scale(4, 1.0);
  std::vector<int64_t> out(s.begin(), s.end());
  std::vector<double> given;
  const int scales_at = old ? 1 : 2;
  if (upsample && at.has("scales")) {
    for (float f : *at.get_floats("scales"))
      given.push_back(f);
  } else if (c.has_input(n, scales_at) && c.constant(n, scales_at, "scales").numel() > 0) {
    const Tensor& t = c.constant(n, scales_at, "scales");
    for (int64_t i = 0; i < t.numel(); ++i)
      given.push_back(t.get(i));
  }
  if (!given.empty()) {
    if (given.size() != axes.size())
      throw Error("", node_label(n),
                  cat("scales has ", given.size(), " entries for ", axes.size(), " axes"));
    for (size_t i = 0; i < axes.size(); ++i) {
      const double g = double(float(given[i]));
      if (!(g > 0) || g > 4096)
        throw Error("", node_label(n),
                    cat("scale ", g, " for axis ", axes[i], " is not in (0, 4096]"));
      scale[size_t(axes[i])] = g;
      out[size_t(axes[i])] = int64_t(std::floor(double(s[size_t(axes[i])]) * g));
    }
  } else if (!old && c.has_input(n, 3)) {
    std::vector<int64_t> sizes = const_ints(n, c.constant(n, 3, "sizes"), "sizes");
    if (sizes.size() != axes.size())
      throw Error("", node_label(n), cat("sizes must have ", axes.size(), " entries"));
    const std::string policy =
        v18 ? at.get_string("keep_aspect_ratio_policy", "stretch") : "stretch";
    if (policy == "not_larger" || policy == "not_smaller") {
      // One scale for all axes; the sizes it gives, rounded (ONNX's rule).
      double k = double(sizes[0]) / double(s[size_t(axes[0])]);
      for (size_t i = 0; i < axes.size(); ++i) {
        const double g = double(sizes[i]) / double(s[size_t(axes[i])]);
        k = policy == "not_larger" ? std::min(k, g) : std::max(k, g);
      }
      for (size_t i = 0; i < axes.size(); ++i) {
        scale[size_t(axes[i])] = double(float(k));
        sizes[i] = int64_t(std::round(k * double(s[size_t(axes[i])])));
      }
    } else if (policy != "stretch") {
      throw bad_attr(n, "keep_aspect_ratio_policy", policy, "is not supported");
    } else {
      for (size_t i = 0; i < axes.size(); ++i)
        scale[size_t(axes[i])] = 0; // out / in
    }
    for (size_t i = 0; i < axes.size(); ++i)
      out[size_t(axes[i])] = sizes[i];
  } else {
    throw Error("", node_label(n), "neither scales nor sizes is given");
  }
  for (int axis = 0; axis < 2; ++axis)
    if (out[size_t(axis)] != s[size_t(axis)] ||
        (scale[size_t(axis)] != 1 && scale[size_t(axis)] != 0))
      throw Error("", node_label(n),
                  cat("resizes axis ", axis, " (", s[size_t(axis)], " -> ", out[size_t(axis)],
                      "); kiln's resize changes only H and W"));
  for (int axis = 2; axis < 4; ++axis) {
    if (out[size_t(axis)] < 1)
      throw Error("", node_label(n), cat("axis ", axis, " would have no output"));
    a.size[size_t(axis - 2)] = out[size_t(axis)];
    a.scale[size_t(axis - 2)] = scale[size_t(axis)];
  }

  // The coordinate rule and the rounding of nearest.
  if (old) {
    a.coordinate_mode = int64_t(CoordinateMode::asymmetric);
    // ONNX Runtime's rule before opset 11: floor, but ceil where an axis is downscaled.
    const bool down_h = out[2] < s[2], down_w = out[3] < s[3];
    if (down_h != down_w && a.mode == int64_t(ResizeMode::nearest))
      throw Error("", node_label(n),
                  "nearest resize that shrinks one of H, W and not the other is not supported "
                  "before opset 11");
    a.nearest_mode = int64_t(down_h ? NearestMode::ceil : NearestMode::floor);
  } else {
    const std::string coord = at.get_string("coordinate_transformation_mode", "half_pixel");
    if (coord == "asymmetric")
      a.coordinate_mode = int64_t(CoordinateMode::asymmetric);
    else if (coord == "half_pixel")
      a.coordinate_mode = int64_t(CoordinateMode::half_pixel);
    else if (coord == "pytorch_half_pixel")
      a.coordinate_mode = int64_t(CoordinateMode::pytorch_half_pixel);
    else if (coord == "align_corners")
      a.coordinate_mode = int64_t(CoordinateMode::align_corners);
    else if ((coord == "half_pixel_symmetric" && c.opset < 19) ||
             (coord == "tf_half_pixel_for_nn" && c.opset >= 13))
      throw bad_attr(n, "coordinate_transformation_mode", coord,
                     cat("is not defined in opset ", c.opset));
    else
      throw bad_attr(n, "coordinate_transformation_mode", coord,
                     "is not supported (kiln: asymmetric, half_pixel, pytorch_half_pixel, "
                     "align_corners)");
    const std::string rounding = at.get_string("nearest_mode", "round_prefer_floor");
    if (rounding == "floor")
      a.nearest_mode = int64_t(NearestMode::floor);
    else if (rounding == "ceil")
      a.nearest_mode = int64_t(NearestMode::ceil);
    else if (rounding == "round_prefer_floor")
      a.nearest_mode = int64_t(NearestMode::round_prefer_floor);
    else if (rounding == "round_prefer_ceil")
      a.nearest_mode = int64_t(NearestMode::round_prefer_ceil);
    else
      throw bad_attr(n, "nearest_mode", rounding, "is not supported");
    if (at.get_int("exclude_outside", 0) != 0)
      throw Error("", node_label(n), "attribute \"exclude_outside\" = 1 is not supported");
    // Antialiasing changes linear downscaling only.
    if (v18 && at.get_int("antialias", 0) != 0 && a.mode == int64_t(ResizeMode::linear) &&
        (out[2] < s[2] || out[3] < s[3]))
      throw Error("", node_label(n),
                  "attribute \"antialias\" = 1 on a linear downscale is not supported");
  }
  c.add_layer(n, OpKind::resize, a, {x});
}

void convert_pad(Converter& c, const onnx::NodeProto& n) {
  const bool v11 = c.opset >= 11;
  const NodeAttrs at(n, v11 ? std::initializer_list<std::string_view>{"mode"}
                            : std::initializer_list<std::string_view>{"mode", "pads", "value"});
  const int x = c.activation(n, 0);
  const Shape s = c.shape_of(x);
  if (s.size() != 4)
    throw Error("", node_label(n),
                cat("input has shape ", shape_str(s), "; kiln pads [N, C, H, W]"));
  Attrs a;
  const std::string mode = at.get_string("mode", "constant");
  if (mode == "constant")
    a.mode = int64_t(PadMode::constant);
  else if (mode == "reflect")
    a.mode = int64_t(PadMode::reflect);
  else if (mode == "edge")
    a.mode = int64_t(PadMode::edge);
  else
    throw bad_attr(n, "mode", mode, "is not supported (kiln: constant, reflect, edge)");
  std::vector<int64_t> pads;
  if (v11) {
    pads = const_ints(n, c.constant(n, 1, "pads"), "pads");
    if (c.has_input(n, 2)) {
      const Tensor& v = c.constant(n, 2, "constant_value");
      if (v.numel() > 1) throw Error("", node_label(n), "constant_value must be a scalar");
      a.value = v.numel() == 1 ? v.get(0) : 0.0;
    }
  } else {
    pads = at.get_ints("pads").value_or(std::vector<int64_t>{});
    a.value = at.get_float("value", 0.f);
  }
  // Opset 18's axes: the pads are given for those axes only.
  std::vector<int64_t> axes{0, 1, 2, 3};
  if (c.opset >= 18 && c.has_input(n, 3)) {
    axes.clear();
    for (int64_t ax : const_ints(n, c.constant(n, 3, "axes"), "axes")) {
      const int64_t k = ax < 0 ? ax + 4 : ax;
      if (k < 0 || k > 3 || std::find(axes.begin(), axes.end(), k) != axes.end())
        throw Error("", node_label(n), cat("axes holds ", ax, " (out of range or repeated)"));
      axes.push_back(k);
    }
  }
  if (pads.size() != 2 * axes.size())
    throw Error("", node_label(n),
                cat("pads has ", pads.size(), " values for ", axes.size(), " axes, expected ",
                    2 * axes.size()));
  std::vector<int64_t> begin(4, 0), end(4, 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    begin[size_t(axes[i])] = pads[i];
    end[size_t(axes[i])] = pads[axes.size() + i];
  }
  for (int k = 0; k < 4; ++k) {
    if (begin[size_t(k)] < 0 || end[size_t(k)] < 0)
      throw Error("", node_label(n), "negative pads (cropping) are not supported");
    if (k < 2 && (begin[size_t(k)] != 0 || end[size_t(k)] != 0))
      throw Error("", node_label(n), cat("pads axis ", k, "; kiln's pad pads H and W only"));
  }
  a.padding = {begin[2], begin[3]};
  a.padding_end = {end[2], end[3]};
  if (a.padding == Int2{0, 0} && a.padding_end == Int2{0, 0}) { // nothing to pad
    Value v;
    v.ref = x;
    c.set_output(n, 0, v);
    ++c.dropped;
    return;
  }
  c.add_layer(n, OpKind::pad, a, {x});
}

void convert_space_to_depth(Converter& c, const onnx::NodeProto& n) {
  const NodeAttrs at(n, {"blocksize"});
  const int x = c.activation(n, 0);
  const Shape s = c.shape_of(x);
  if (s.size() != 4)
    throw Error(
        "", node_label(n),
        cat("input has shape ", shape_str(s), "; kiln's space_to_depth takes [N, C, H, W]"));
  if (!at.has("blocksize")) throw Error("", node_label(n), "attribute \"blocksize\" is required");
  const int64_t b = at.get_int("blocksize", 0);
  if (b < 1) throw bad_attr(n, "blocksize", std::to_string(b), "must be at least 1");
  // ONNX requires H and W divisible (kiln would pad the rest with zeros: a different model).
  if (s[2] % b != 0 || s[3] % b != 0)
    throw bad_attr(n, "blocksize", std::to_string(b),
                   cat("does not divide the input's H x W ", s[2], "x", s[3]));
  Attrs a;
  a.factor = b;
  c.add_layer(n, OpKind::space_to_depth, a, {x});
}

} // namespace kiln::onnx_import
