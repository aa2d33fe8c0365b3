// templates/pool/adaptive_avgpool2d.cuh, seen from the generator: adaptive (and global)
// average pooling, forward and backward.
#include "generator/select/families/spatial/spatial_common.hpp"
#include "generator/select/families/spatial/spatial_families.hpp"

#include <algorithm>
#include <fmt/format.h>

namespace kiln {

namespace {

using namespace spatial;

// The largest adaptive window along one axis (runtime/op.hpp's rule).
int64_t max_window(int64_t in, int64_t out) {
  int64_t m = 0;
  for (int64_t o = 0; o < out; ++o)
    m = std::max(m, adaptive_end(o, in, out) - adaptive_begin(o, in, out));
  return m;
}

void cfg_sizes(Variant& v, DType t, const Shape& x, const Shape& y, Layout l) {
  cfg_type(v, "T", cpp_type(t));
  cfg_int(v, "N", x[0]);
  cfg_int(v, "C", x[1]);
  cfg_int(v, "H", x[2]);
  cfg_int(v, "W", x[3]);
  cfg_int(v, "OH", y[2]);
  cfg_int(v, "OW", y[3]);
  cfg_bool(v, "NHWC", l == Layout::nhwc);
}

std::string stem(const char* fn, const StepTypes& st, const Shape& x, const Shape& y) {
  return fmt::format("adaptive_avgpool2d_{}_{}_{}_{}_o{}x{}", fn, dtype_tag(st.dtype),
                     layout_tag(st.layout), shape_tag(x), y[2], y[3]);
}

Variant forward_direct(const StepInfo& s, const StepTypes& st, const Shape& x, const Shape& y,
                       double window) {
  Variant v = make_variant(s, "adaptive_avgpool2d", "pool/adaptive_avgpool2d.cuh",
                           "kiln::pool::adaptive_avgpool2d_direct",
                           stem("fwd", st, x, y) + fmt::format("_direct_t{}", kThreads));
  cfg_sizes(v, st.dtype, x, y, st.layout);
  cfg_int(v, "THREADS", kThreads);
  v.args = {"x", "y"};
  const int64_t out = numel(y);
  grid_stride(v, s, out);
  v.registers_per_thread = registers(s, 32, 64);
  v.bytes = double((numel(x) + out) * int64_t(dtype_size(st.dtype)));
  v.flops = double(numel(x));
  // One thread walks a whole window: long windows serialise on memory latency.
  v.efficiency = 0.8 * std::min(1.0, 16.0 / window);
  v.note = "one output per thread, its window summed in row-major order";
  require_layout(v, s, st.layout);
  return v;
}

// R threads per output: NCHW R <= 32 (consecutive lanes, shuffles) or R = the block;
// NHWC G = kThreads / R consecutive outputs (channels) per block.
Variant forward_reduce(const StepInfo& s, const StepTypes& st, const Shape& x, const Shape& y,
                       int64_t r, double window) {
  const int64_t g = kThreads / r;
  Variant v = make_variant(s, "adaptive_avgpool2d", "pool/adaptive_avgpool2d.cuh",
                           "kiln::pool::adaptive_avgpool2d_reduce",
                           stem("fwd", st, x, y) + fmt::format("_reduce_r{}_t{}", r, kThreads));
  cfg_sizes(v, st.dtype, x, y, st.layout);
  cfg_int(v, "THREADS", kThreads);
  cfg_int(v, "R", r);
  v.args = {"x", "y"};
  const int64_t out = numel(y);
  v.block = {kThreads, 1, 1};
  v.grid = {(out + g - 1) / g, 1, 1};
  if (st.layout == Layout::nhwc)
    v.static_smem = kThreads * 4;
  else if (r > 32)
    v.static_smem = kThreads / 32 * 4;
  v.registers_per_thread = registers(s, 32, 48);
  v.bytes = double((numel(x) + out) * int64_t(dtype_size(st.dtype)));
  v.flops = double(numel(x));
  // Lanes beyond a window's size idle; the tree costs a few steps.
  v.efficiency = 0.75 * std::min(1.0, window / double(r));
  v.note = st.layout == Layout::nhwc
               ? "block-level tree reduction per output: channels across threads, window "
                 "rows split R ways, partial sums added in shared memory"
               : "tree reduction per output: the window split R ways, partial sums added by "
                 "warp shuffles (and shared memory across warps)";
  require_layout(v, s, st.layout);
  return v;
}

Variant backward(const StepInfo& s, const StepTypes& st, const Shape& x, const Shape& y) {
  const bool acc = s.step.accumulate;
  Variant v = make_variant(s, "adaptive_avgpool2d", "pool/adaptive_avgpool2d.cuh",
                           "kiln::pool::adaptive_avgpool2d_backward",
                           stem("bwd", st, x, y) +
                               fmt::format("_gather{}_t{}", acc ? "_acc" : "", kThreads));
  cfg_sizes(v, st.dtype, x, y, st.layout);
  cfg_bool(v, "ACCUMULATE", acc);
  cfg_int(v, "THREADS", kThreads);
  v.args = {"dy", "dx"};
  const int64_t in = numel(x);
  grid_stride(v, s, in);
  v.registers_per_thread = registers(s, 48, 56);
  v.bytes = double((numel(y) + in * (acc ? 2 : 1)) * int64_t(dtype_size(st.dtype)));
  v.flops = double(in) * 2;
  v.efficiency = 0.75;
  v.note = "gather: one dx element per thread sums dy / window size over the windows "
           "containing it";
  require_layout(v, s, st.layout);
  return v;
}

} // namespace

std::vector<Variant> AdaptiveAvgPool2dFamily::candidates(const StepInfo& s) const {
  const Step& st = s.step;
  if (st.fn != Fn::adaptive_avgpool2d_forward && st.fn != Fn::adaptive_avgpool2d_backward)
    return {};
  const bool forward = st.fn == Fn::adaptive_avgpool2d_forward;
  if (forward && st.accumulate) return {};
  const auto types = step_types(s, forward ? "y" : "dx");
  if (!types) return {};
  const Shape& x = s.shape(forward ? "x" : "dx");
  const Shape& y = s.shape(forward ? "y" : "dy");
  if (!indexable(x) || !indexable(y)) return {};
  if (!forward) return {backward(s, *types, x, y)};
  const int64_t window = max_window(x[2], y[2]) * max_window(x[3], y[3]);
  std::vector<Variant> r = {forward_direct(s, *types, x, y, double(window))};
  if (window >= 8) { // windows worth splitting among threads
    if (types->layout == Layout::nhwc) {
      // Up to 32 channels per block (coalesced rows), fewer when the blocks would not
      // cover the GPU twice.
      int64_t g = std::min<int64_t>(32, pow2_ceil(x[1]));
      while (g > 4 && (numel(y) + g - 1) / g < 2 * s.gpu.sm_count)
        g /= 2;
      r.push_back(forward_reduce(s, *types, x, y, kThreads / g, double(window)));
    } else {
      r.push_back(forward_reduce(s, *types, x, y, std::min<int64_t>(32, pow2_ceil(window)),
                                 double(window)));
      if (window > 1024) r.push_back(forward_reduce(s, *types, x, y, kThreads, double(window)));
    }
  }
  std::erase_if(r, [](const Variant& v) { return v.grid[0] > 2147483647; });
  return r;
}

} // namespace kiln
