// templates/spatial/pad.cuh, seen from the generator.
#include "generator/select/families/launch_shape.hpp"
#include "generator/select/families/spatial/spatial_common.hpp"
#include "generator/select/families/spatial/spatial_families.hpp"

#include <bit>
#include <fmt/format.h>

namespace kiln {

using namespace spatial;

std::vector<Variant> PadFamily::candidates(const StepInfo& s) const {
  const Step& st = s.step;
  if (st.fn != Fn::pad_forward && st.fn != Fn::pad_backward) return {};
  const bool forward = st.fn == Fn::pad_forward, acc = st.accumulate;
  if (forward && acc) return {};
  const auto types = step_types(s, forward ? "y" : "dx");
  if (!types) return {};
  const Shape& x = s.shape(forward ? "x" : "dx");
  const Shape& y = s.shape(forward ? "y" : "dy");
  if (!indexable(x) || !indexable(y)) return {};
  const Attrs& a = st.attrs;
  const Int2 end = padding_end(a);
  const float value = float(a.value);
  Variant v =
      make_variant(s, "pad", "spatial/pad.cuh",
                   forward ? "kiln::spatial::pad_forward" : "kiln::spatial::pad_backward",
                   fmt::format("pad_{}_{}_{}_{}_p{}x{}x{}x{}_m{}{}{}_t{}", forward ? "fwd" : "bwd",
                               dtype_tag(types->dtype), layout_tag(types->layout), shape_tag(x),
                               a.padding[0], a.padding[1], end[0], end[1], a.mode,
                               a.mode == 0 && value != 0
                                   ? fmt::format("_v{:08x}", std::bit_cast<uint32_t>(value))
                                   : std::string(),
                               acc ? "_acc" : "", kThreads));
  cfg_type(v, "T", cpp_type(types->dtype));
  cfg_int(v, "N", x[0]);
  cfg_int(v, "C", x[1]);
  cfg_int(v, "H", x[2]);
  cfg_int(v, "W", x[3]);
  cfg_int(v, "PT", a.padding[0]);
  cfg_int(v, "PL", a.padding[1]);
  cfg_int(v, "OH", y[2]);
  cfg_int(v, "OW", y[3]);
  cfg_int(v, "MODE", a.mode);
  cfg_float(v, "VALUE", double(value));
  cfg_bool(v, "NHWC", types->layout == Layout::nhwc);
  if (!forward) cfg_bool(v, "ACCUMULATE", acc);
  cfg_int(v, "THREADS", kThreads);
  v.args = forward ? std::vector<std::string>{"x", "y"} : std::vector<std::string>{"dy", "dx"};
  grid_stride(v, s, forward ? numel(y) : numel(x));
  v.registers_per_thread = registers(s, 24, 40);
  v.bytes = double((numel(x) * (acc ? 2 : 1) + numel(y)) * int64_t(dtype_size(types->dtype)));
  v.flops = forward ? 0 : double(numel(y));
  v.efficiency = 0.8;
  v.note = forward ? "one output per thread in memory order, reading its source or the constant"
                   : "gather: one dx element per thread sums the dy elements it is the source of";
  require_layout(v, s, types->layout);
  return {v};
}

} // namespace kiln
