// templates/spatial/resize.cuh, seen from the generator.
#include "generator/select/families/launch_shape.hpp"
#include "generator/select/families/spatial/spatial_common.hpp"
#include "generator/select/families/spatial/spatial_families.hpp"

#include <bit>
#include <cmath>
#include <fmt/format.h>

namespace kiln {

using namespace spatial;

namespace {

// The coordinate scale of one axis as the kernel holds it (a float; runtime/cpu/resize_taps.hpp).
double axis_scale(double scale, int64_t in, int64_t out) {
  return double(scale > 0 ? float(scale) : float(out) / float(in));
}

// The resized length align_corners divides by (runtime/cpu/resize_taps.hpp): in * the given
// scale, or the output's length.
double axis_length(double scale, int64_t in, int64_t out) {
  return double(scale > 0 ? float(in) * float(scale) : float(out));
}

} // namespace

std::vector<Variant> ResizeFamily::candidates(const StepInfo& s) const {
  const Step& st = s.step;
  if (st.fn != Fn::resize_forward && st.fn != Fn::resize_backward) return {};
  const bool forward = st.fn == Fn::resize_forward, acc = st.accumulate;
  if (forward && acc) return {};
  const auto types = step_types(s, forward ? "y" : "dx");
  if (!types) return {};
  const Shape& x = s.shape(forward ? "x" : "dx");
  const Shape& y = s.shape(forward ? "y" : "dy");
  if (!indexable(x) || !indexable(y)) return {};
  const Attrs& a = st.attrs;
  const bool linear = ResizeMode(a.mode) == ResizeMode::linear;
  const double sh = axis_scale(a.scale[0], x[2], y[2]), sw = axis_scale(a.scale[1], x[3], y[3]);
  // The name carries what changes the code: shapes, mode, coordinate rule (and rounding for
  // nearest) and the scales' float bits (they differ from out / in where given).
  const std::string rule =
      fmt::format("{}{}c{}_{:08x}_{:08x}", linear ? "lin" : "near",
                  linear ? std::string() : fmt::format("{}", a.nearest_mode), a.coordinate_mode,
                  std::bit_cast<uint32_t>(float(sh)), std::bit_cast<uint32_t>(float(sw)));
  Variant v =
      make_variant(s, "resize", "spatial/resize.cuh",
                   forward ? "kiln::spatial::resize_forward" : "kiln::spatial::resize_backward",
                   fmt::format("resize_{}_{}_{}_{}_to{}x{}_{}{}_t{}", forward ? "fwd" : "bwd",
                               dtype_tag(types->dtype), layout_tag(types->layout), shape_tag(x),
                               y[2], y[3], rule, acc ? "_acc" : "", kThreads));
  cfg_type(v, "T", cpp_type(types->dtype));
  cfg_int(v, "N", x[0]);
  cfg_int(v, "C", x[1]);
  cfg_int(v, "H", x[2]);
  cfg_int(v, "W", x[3]);
  cfg_int(v, "OH", y[2]);
  cfg_int(v, "OW", y[3]);
  cfg_float(v, "SCALE_H", sh);
  cfg_float(v, "SCALE_W", sw);
  cfg_float(v, "LENGTH_H", axis_length(a.scale[0], x[2], y[2]));
  cfg_float(v, "LENGTH_W", axis_length(a.scale[1], x[3], y[3]));
  cfg_int(v, "MODE", a.mode);
  cfg_int(v, "COORD", a.coordinate_mode);
  cfg_int(v, "NEAREST", a.nearest_mode);
  cfg_bool(v, "NHWC", types->layout == Layout::nhwc);
  if (!forward) cfg_bool(v, "ACCUMULATE", acc);
  cfg_int(v, "THREADS", kThreads);
  v.args = forward ? std::vector<std::string>{"x", "y"} : std::vector<std::string>{"dy", "dx"};
  grid_stride(v, s, forward ? numel(y) : numel(x));
  v.registers_per_thread = registers(s, 32, 40);
  const int64_t taps = linear ? 4 : 1;
  v.bytes = double((numel(x) * (acc ? 2 : 1) + numel(y)) * int64_t(dtype_size(types->dtype)));
  v.flops = double(numel(y) * 2 * taps);
  // The backward's per-element binary searches cost about as much as its reads.
  v.efficiency = forward ? 0.8 : 0.5;
  v.note = forward ? "one output per thread in memory order, reading its taps"
                   : "gather: one dx element per thread sums dy over the outputs whose taps "
                     "reach it (found by binary search), weighted";
  require_layout(v, s, types->layout);
  return {v};
}

} // namespace kiln
