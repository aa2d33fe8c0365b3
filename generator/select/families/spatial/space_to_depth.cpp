// templates/spatial/space_to_depth.cuh, seen from the generator.
#include "generator/select/families/launch_shape.hpp"
#include "generator/select/families/spatial/spatial_common.hpp"
#include "generator/select/families/spatial/spatial_families.hpp"

#include <fmt/format.h>

namespace kiln {

using namespace spatial;

std::vector<Variant> SpaceToDepthFamily::candidates(const StepInfo& s) const {
  const Step& st = s.step;
  if (st.fn != Fn::space_to_depth_forward && st.fn != Fn::space_to_depth_backward) return {};
  const bool forward = st.fn == Fn::space_to_depth_forward, acc = st.accumulate;
  if (forward && acc) return {};
  const auto types = step_types(s, forward ? "y" : "dx");
  if (!types) return {};
  const char* xr = forward ? "x" : "dx";
  const char* yr = forward ? "y" : "dy";
  const Shape& x = s.shape(xr);
  const Shape& y = s.shape(yr);
  if (!indexable(x) || !indexable(y)) return {};
  // Each tensor in the layout its buffer holds: the op usually turns an NCHW image (or an
  // OIHW weight) into an NHWC tensor, and a conversion of x first would double its traffic.
  const Layout xl = s.layout(xr), yl = s.layout(yr);
  const Attrs& a = st.attrs;
  Variant v = make_variant(
      s, "space_to_depth", "spatial/space_to_depth.cuh",
      forward ? "kiln::spatial::space_to_depth_forward" : "kiln::spatial::space_to_depth_backward",
      fmt::format("space_to_depth_{}_{}_{}{}_{}_s{}_p{}x{}_o{}x{}_c{}{}_t{}",
                  forward ? "fwd" : "bwd", dtype_tag(types->dtype), layout_tag(xl), layout_tag(yl),
                  shape_tag(x), a.factor, a.padding[0], a.padding[1], y[2], y[3], y[1],
                  acc ? "_acc" : "", kThreads));
  cfg_type(v, "T", cpp_type(types->dtype));
  cfg_int(v, "N", x[0]);
  cfg_int(v, "C", x[1]);
  cfg_int(v, "H", x[2]);
  cfg_int(v, "W", x[3]);
  cfg_int(v, "S", a.factor);
  cfg_int(v, "PT", a.padding[0]);
  cfg_int(v, "PL", a.padding[1]);
  cfg_int(v, "OH", y[2]);
  cfg_int(v, "OW", y[3]);
  cfg_int(v, "CY", y[1]);
  cfg_bool(v, "X_NHWC", xl == Layout::nhwc);
  cfg_bool(v, "Y_NHWC", yl == Layout::nhwc);
  if (!forward) cfg_bool(v, "ACCUMULATE", acc);
  cfg_int(v, "THREADS", kThreads);
  v.args = forward ? std::vector<std::string>{"x", "y"} : std::vector<std::string>{"dy", "dx"};
  grid_stride(v, s, forward ? numel(y) : numel(x));
  v.registers_per_thread = registers(s, 24, 40);
  v.bytes = double((numel(x) * (acc ? 2 : 1) + numel(y)) * int64_t(dtype_size(types->dtype)));
  v.flops = 0;
  v.efficiency = 0.8;
  v.note = forward ? "one output per thread in y's memory order, reading its source or zero"
                   : "gather: one dx element per thread reads the one dy element it went to";
  v.layouts = {{xr, xl}, {yr, yl}};
  return {v};
}

} // namespace kiln
