// resize (nearest or bilinear over H, W; ONNX Resize's coordinate rules): the op and its
// functions (forward; backward scatters dy into the taps it read, with their weights).
// "upsample2d" (kiln's earlier nearest, integer-scale op) is a spelling of it: parse_op reads
// that name as resize, and resize's defaults (nearest, asymmetric, floor) give its meaning.
#include "runtime/cpu/step_args.hpp"
#include "runtime/error.hpp"
#include "runtime/ops/registry.hpp"
#include "runtime/ops/roles.hpp"
#include "runtime/ops/shape_rules.hpp"
#include "runtime/ops/step_check.hpp"

#include <cmath>

namespace kiln {

namespace {

using namespace shape_rules;
using cpu::StepArgs;

// In the order of ResizeMode, CoordinateMode and NearestMode (runtime/op.hpp).
constexpr std::string_view modes[] = {"nearest", "linear"};
constexpr std::string_view coordinate_modes[] = {"asymmetric", "half_pixel", "pytorch_half_pixel",
                                                 "align_corners"};
constexpr std::string_view nearest_modes[] = {"floor", "round_prefer_floor", "round_prefer_ceil",
                                              "ceil"};

constexpr AttrSpec attrs[] = {
    {"scale", AttrType::number2, false},
    {"size", AttrType::int2, false},
    {"mode", AttrType::choice, false, modes},
    {"coordinate_transformation_mode", AttrType::choice, false, coordinate_modes},
    {"nearest_mode", AttrType::choice, false, nearest_modes}};

int64_t extent(const Attrs& a, int axis, int64_t in) {
  const double s = a.scale[size_t(axis)];
  const int64_t size = a.size[size_t(axis)];
  if (!(s >= 0 && s <= 1 << 12))
    throw Error("", "scale", cat("must be positive and at most 4096, got ", s));
  if (size < 0) throw Error("", "size", cat("must be positive, got ", size));
  if (size > 0) {
    check_positive(size, "size");
    return size;
  }
  if (s == 0) throw Error("", "scale", "resize needs a scale or a size for each axis");
  const double out = std::floor(double(in) * s);
  if (out < 1) throw Error("", "scale", cat(s, " leaves no output row of ", in));
  check_positive(int64_t(out), "size");
  return int64_t(out);
}

Shape shape(const Attrs& a, std::span<const Shape> in) {
  const Shape& x = in[0];
  need_rank(x, 4, "[N, C, H, W]");
  if (a.mode < 0 || a.mode >= int64_t(std::size(modes)) || a.coordinate_mode < 0 ||
      a.coordinate_mode >= int64_t(std::size(coordinate_modes)) || a.nearest_mode < 0 ||
      a.nearest_mode >= int64_t(std::size(nearest_modes)))
    throw Error("resize: a mode out of range");
  const Shape y{x[0], x[1], extent(a, 0, x[2]), extent(a, 1, x[3])};
  mul(mul(y[0], y[1]), mul(y[2], y[3]));
  return y;
}

constexpr OpDef op_defs[] = {
    {.kind = OpKind::resize, .name = "resize", .attrs = attrs, .shape = shape}};

void check_forward(const StepCheck& c) { c.expect("y", c.forward(c.shape("x"))); }

template <class T> void forward(const StepArgs<T>& c) {
  cpu::resize<T>(c.s.attrs, c.in("x"), c.out("y"));
}

void check_backward(const StepCheck& c) { c.expect("dy", c.forward(c.shape("dx"))); }

template <class T> void backward(const StepArgs<T>& c) {
  cpu::resize_backward<T>(c.s.attrs, c.in("dy"), c.out("dx"), c.s.accumulate);
}

constexpr FnDef fn_defs[] = {
    {.fn = Fn::resize_forward,
     .name = "resize.forward",
     .signature = {roles::x, roles::y, {}},
     .check = check_forward,
     .cpu_f32 = forward<float>,
     .cpu_f64 = forward<double>},
    {.fn = Fn::resize_backward,
     .name = "resize.backward",
     .signature = {roles::dy, roles::dx, {}},
     .check = check_backward,
     .cpu_f32 = backward<float>,
     .cpu_f64 = backward<double>},
};

} // namespace

namespace ops {
OpFile resize_file() { return {op_defs, fn_defs}; }
} // namespace ops

} // namespace kiln
