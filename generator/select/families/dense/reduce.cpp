// The reduce op's kernels (templates/dense/reduce.cuh), seen from the generator: x's and
// y's memory described by element strides of [N, C, H, W] and [N, C', H', W'], so one
// kernel takes NCHW, NHWC, [N, C] and a y of whatever rank keepdims gives.
#include "generator/select/families/dense/reduce.hpp"

#include "generator/select/families/dense/dense_common.hpp"
#include "generator/select/families/launch_shape.hpp"

#include <algorithm>
#include <array>
#include <fmt/format.h>

namespace kiln::dense {

namespace {

constexpr int64_t kThreads = 256;

// 0 sum, 1 mean, 2 max (the template's MODE), and whether fn is a backward; -1 for others.
int mode_of(Fn fn, bool& backward) {
  backward = fn == Fn::reduce_sum_backward || fn == Fn::reduce_mean_backward ||
             fn == Fn::reduce_max_backward;
  if (fn == Fn::reduce_sum_forward || fn == Fn::reduce_sum_backward) return 0;
  if (fn == Fn::reduce_mean_forward || fn == Fn::reduce_mean_backward) return 1;
  if (fn == Fn::reduce_max_forward || fn == Fn::reduce_max_backward) return 2;
  return -1;
}

// Element strides of [n, c, h, w] stored NCHW, or NHWC when `nhwc`.
std::array<int64_t, 4> strides(int64_t c, int64_t h, int64_t w, bool nhwc) {
  if (nhwc) return {h * w * c, 1, w * c, c};
  return {c * h * w, h * w, w, 1};
}

} // namespace

std::vector<Variant> ReduceFamily::candidates(const StepInfo& s) const {
  bool backward = false;
  const int mode = mode_of(s.step.fn, backward);
  if (mode < 0) return {};
  const auto t = common_dtype(s);
  const auto l = common_layout(s);
  if (!t || !l) return {};
  const Attrs& a = s.step.attrs;
  const Shape& x = s.shape(backward ? "dx" : "x");
  const Shape& y = s.shape(backward ? "dy" : "y");
  if (x.size() != 4 && x.size() != 2) return {};
  const int64_t n = x[0], c = x[1], h = x.size() == 4 ? x[2] : 1, w = x.size() == 4 ? x[3] : 1;
  if (!fits_int(c) || !fits_int(h) || !fits_int(w) || !fits_int(c * h * w)) return {};
  const bool nhwc = x.size() == 4 && *l == Layout::nhwc;
  const auto xs = strides(c, h, w, nhwc);
  // y as [N, C', H', W']: NHWC only when it is a 4-D NHWC tensor, else row-major.
  const int64_t oc = a.reduce_c ? 1 : c, oh = a.reduce_h ? 1 : h, ow = a.reduce_w ? 1 : w;
  const bool y_nhwc = y.size() == 4 && *l == Layout::nhwc;
  const auto ys = strides(oc, oh, ow, y_nhwc);
  const bool acc = backward && s.step.accumulate;
  static constexpr const char* kMode[] = {"sum", "mean", "max"};
  const std::string axes =
      std::string(a.reduce_c ? "c" : "") + (a.reduce_h ? "h" : "") + (a.reduce_w ? "w" : "");
  Variant v;
  v.family = "reduce";
  v.header = "dense/reduce.cuh";
  v.function = backward ? "kiln::dense::reduce_backward" : "kiln::dense::reduce_forward";
  v.name =
      fmt::format("reduce_{}_{}_{}_{}_{}_over{}_y{}{}_warp_t{}_{}", kMode[mode],
                  backward ? "backward" : "forward", dtype_tag(*t), layout_tag(x, *l), shape_tag(x),
                  axes, layout_tag(y, *l), acc ? "_acc" : "", kThreads, s.arch_tag());
  cfg_type(v, "T", cpp_type(*t));
  cfg_int(v, "N", n);
  cfg_int(v, "C", c);
  cfg_int(v, "H", h);
  cfg_int(v, "W", w);
  cfg_bool(v, "RC", a.reduce_c);
  cfg_bool(v, "RH", a.reduce_h);
  cfg_bool(v, "RW", a.reduce_w);
  cfg_int(v, "MODE", mode);
  const char* xn[] = {"XN", "XC", "XH", "XW"};
  const char* yn[] = {"YN", "YC", "YH", "YW"};
  for (size_t i = 0; i < 4; ++i) {
    cfg_int(v, xn[i], xs[i]);
    cfg_int(v, yn[i], ys[i]);
  }
  cfg_int(v, "THREADS", kThreads);
  if (backward) cfg_bool(v, "ACCUMULATE", acc);
  if (!backward)
    v.args = {"x", "y"};
  else if (mode == 2)
    v.args = {"x", "dy", "dx"};
  else
    v.args = {"dy", "dx"};
  const int64_t outputs = numel(y);
  v.block = {kThreads, 1, 1};
  v.grid = {grid_stride_blocks(s.gpu, outputs * 32, kThreads), 1, 1};
  v.registers_per_thread = 32;
  const double bytes = double(numel(x)) * double(dtype_size(*t));
  // x (or dx) once, x again for max's backward, dx read back when accumulating.
  v.bytes = bytes * (backward ? 1 + (mode == 2 ? 1 : 0) + (acc ? 1 : 0) : 1) +
            double(outputs) * double(dtype_size(*t));
  v.flops = double(numel(x));
  // Lanes take neighbouring reduced elements: coalesced when the innermost reduced axis is
  // the contiguous one, scattered (a sector per element) otherwise; few elements per output
  // leave lanes idle.
  const int64_t r = numel(x) / std::max<int64_t>(1, outputs);
  const bool inner = nhwc ? a.reduce_c : (a.reduce_w || (w == 1 && (a.reduce_h || h == 1)));
  v.efficiency = (inner ? 0.7 : 0.25) * std::min(1.0, double(r) / 32.0);
  v.note = "a warp per output, lanes over its reduced elements in (c, h, w) order, shuffle "
           "butterflies";
  v.layouts = layouts_of(s, *l);
  return {v};
}

} // namespace kiln::dense
