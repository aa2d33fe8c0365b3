// Where resize reads: the source taps of one output index along one axis, as ONNX's Resize
// defines them (and ONNX Runtime computes them: the source coordinate in float). Shared by
// the CPU reference's forward and backward; templates/spatial/resize.cuh computes the same
// in device code.
#pragma once

#include "runtime/op.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace kiln::cpu {

// y[o] = w0 * x[i0] + w1 * x[i1] (nearest: i0 = i1, w0 = 1, w1 = 0).
struct ResizeTaps {
  int64_t i0, i1;
  double w0, w1;
};

// The scale the coordinate rule divides by: the attribute where given, else out / in.
inline float resize_scale(double scale, int64_t in, int64_t out) {
  return scale > 0 ? float(scale) : float(out) / float(in);
}

// The resized length align_corners divides by: in * scale where the scale is given (ONNX:
// not rounded), else the output's length.
inline float resize_length(double scale, int64_t in, int64_t out) {
  return scale > 0 ? float(in) * float(scale) : float(out);
}

inline float resize_source(CoordinateMode m, int64_t o, int64_t in, int64_t out, float scale,
                           float length) {
  const float of = float(o);
  switch (m) {
  case CoordinateMode::asymmetric: return of / scale;
  case CoordinateMode::half_pixel: return (of + 0.5f) / scale - 0.5f;
  case CoordinateMode::pytorch_half_pixel: return out > 1 ? (of + 0.5f) / scale - 0.5f : 0.f;
  case CoordinateMode::align_corners:
    return length == 1.f ? 0.f : of * float(in - 1) / (length - 1.f);
  }
  return 0.f;
}

inline ResizeTaps resize_taps(const Attrs& a, int axis, int64_t o, int64_t in, int64_t out) {
  const double given = a.scale[size_t(axis)];
  const float src = resize_source(CoordinateMode(a.coordinate_mode), o, in, out,
                                  resize_scale(given, in, out), resize_length(given, in, out));
  if (ResizeMode(a.mode) == ResizeMode::nearest) {
    const float f = std::floor(src), frac = src - f;
    float r = f;
    switch (NearestMode(a.nearest_mode)) {
    case NearestMode::floor: r = f; break;
    case NearestMode::ceil: r = std::ceil(src); break;
    case NearestMode::round_prefer_floor: r = frac <= 0.5f ? f : f + 1; break;
    case NearestMode::round_prefer_ceil: r = frac < 0.5f ? f : f + 1; break;
    }
    const int64_t i = std::clamp<int64_t>(int64_t(r), 0, in - 1);
    return {i, i, 1.0, 0.0};
  }
  // Linear: the coordinate clamped into the input (ONNX's edge rule, PyTorch's clamp at 0).
  const float c = std::clamp(src, 0.f, float(in - 1));
  const int64_t i0 = std::min<int64_t>(int64_t(c), in - 1), i1 = std::min<int64_t>(i0 + 1, in - 1);
  const float l1 = c - float(i0);
  return {i0, i1, double(1.f - l1), double(l1)};
}

} // namespace kiln::cpu
