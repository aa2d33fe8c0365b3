// templates/dense/layernorm.cuh, seen from the generator: the per-position kernels map
// positions as softmax does, the parameter reduction maps channels as batchnorm does.
#include "generator/select/families/dense/layernorm.hpp"

#include "generator/select/families/dense/dense_common.hpp"
#include "generator/select/families/launch_shape.hpp"

#include <fmt/format.h>

namespace kiln::dense {

namespace {

constexpr int64_t kThreads = 256;

Variant base(const StepInfo& s, DType t, Layout l, const Shape& x, const std::string& family,
             const std::string& config, const std::string& mapping) {
  Variant v;
  v.family = family;
  v.header = "dense/layernorm.cuh";
  v.function = "kiln::dense::" + family;
  v.name = fmt::format("{}_{}_{}_{}{}_{}_t{}_{}", family, dtype_tag(t), layout_tag(x, l),
                       shape_tag(x), config, mapping, kThreads, s.arch_tag());
  cfg_type(v, "T", cpp_type(t));
  v.block = {kThreads, 1, 1};
  v.layouts = layouts_of(s, l);
  return v;
}

// The per-position kernel of each function, and its arguments.
std::string_view kernel_of(Fn fn) {
  switch (fn) {
  case Fn::layernorm_forward: return "layernorm_forward";
  case Fn::layernorm_backward: return "layernorm_backward";
  case Fn::layernorm_invstd_forward: return "layernorm_invstd_forward";
  default: return "layernorm_invstd_backward";
  }
}

std::vector<std::string> args_of(Fn fn) {
  switch (fn) {
  case Fn::layernorm_forward: return {"x", "weight", "bias", "y"};
  case Fn::layernorm_backward: return {"x", "dy", "weight", "dx"};
  case Fn::layernorm_invstd_forward: return {"x", "y"};
  default: return {"x", "dy", "dx"};
  }
}

// forward, backward and layernorm_invstd's: one position's channels per warp (contiguous)
// or per thread.
Variant per_position(const StepInfo& s, DType t, Layout l) {
  const Fn fn = s.step.fn;
  const bool fwd = fn == Fn::layernorm_forward || fn == Fn::layernorm_invstd_forward;
  const bool invstd = fn == Fn::layernorm_invstd_forward || fn == Fn::layernorm_invstd_backward;
  const Shape& x = s.shape("x");
  const Ncs g = ncs(x);
  const bool last = channels_last(x, l);
  const bool stats = s.has("mean");
  const bool acc = !fwd && s.step.accumulate;
  const std::string config = fmt::format("_eps{}", name_number(s.step.attrs.eps)) +
                             (stats ? "_stats" : "") + (acc ? "_acc" : "");
  Variant v = base(s, t, l, x, std::string(kernel_of(fn)), config, last ? "warprow" : "threadpos");
  cfg_int(v, "N", g.n);
  cfg_int(v, "K", g.c);
  cfg_int(v, "S", g.s);
  cfg_bool(v, "CLASS_LAST", last);
  cfg_int(v, "THREADS", kThreads);
  cfg_float(v, "EPS", s.step.attrs.eps);
  if (!fwd) {
    cfg_bool(v, "STATS", stats);
    cfg_bool(v, "ACCUMULATE", acc);
  }
  v.args = args_of(fn);
  if (stats) v.args.insert(v.args.end(), {"mean", "invstd"});
  const int64_t positions = g.n * g.s, lanes = last ? 32 : 1;
  v.grid = {grid_stride_blocks(s.gpu, positions * lanes, kThreads), 1, 1};
  v.registers_per_thread = 32;
  const double bytes = double(numel(x)) * double(dtype_size(t));
  // A position's channels are read three times (sum, squares, write; from cache after the
  // first), dy twice more in the backward.
  // invstd's forward writes one value per position, its backward reads one dy per position.
  v.bytes = invstd ? (fwd ? 1 : (acc ? 3 : 2)) * bytes : fwd ? 2 * bytes : (acc ? 5 : 4) * bytes;
  v.flops = (fwd ? (invstd ? 4.0 : 8.0) : (invstd ? 8.0 : 16.0)) * double(numel(x));
  v.efficiency = last ? 0.7 * std::min(1.0, double(g.c) / 32.0) : 0.7;
  v.note = last ? "a warp per position, lanes over the channels, shuffle reductions"
                : "a thread per position, looping over the channels (strided by H*W)";
  return v;
}

// backward_params: a block per channel (channel-major) or per 32 or fewer channels.
Variant per_channel(const StepInfo& s, DType t, Layout l) {
  const Shape& x = s.shape("x");
  const Ncs g = ncs(x);
  const bool last = channels_last(x, l);
  const bool acc = s.step.accumulate;
  const int64_t cols = last ? std::min<int64_t>(32, next_pow2(g.c)) : 1;
  Variant v = base(s, t, l, x, "layernorm_backward_params", acc ? "_acc" : "",
                   last ? fmt::format("cols{}", cols) : "plane");
  cfg_int(v, "N", g.n);
  cfg_int(v, "C", g.c);
  cfg_int(v, "S", g.s);
  cfg_bool(v, "CHANNELS_LAST", last);
  cfg_int(v, "COLS", cols);
  cfg_int(v, "THREADS", kThreads);
  cfg_bool(v, "ACCUMULATE", acc);
  v.args = {"x", "dy", "mean", "invstd", "dweight", "dbias"};
  v.grid = {(g.c + cols - 1) / cols, 1, 1};
  v.static_smem = 4 * 2 * (cols == 1 ? kThreads / 32 : kThreads);
  v.registers_per_thread = cols > 1 ? 64 : 40;
  const double bytes = double(numel(x)) * double(dtype_size(t));
  v.bytes =
      2 * bytes + reread_bytes(s.gpu, 2.0 * double(g.n * g.s) * double(dtype_size(t)), double(g.c));
  v.flops = 4.0 * double(numel(x));
  v.efficiency = last ? 0.7 * double(std::min<int64_t>(cols, 8)) / 8.0 : 0.7;
  v.note = "per-channel sums of dy * xhat and dy over N*H*W from the saved statistics, "
           "in a fixed order";
  return v;
}

} // namespace

std::vector<Variant> LayernormFamily::candidates(const StepInfo& s) const {
  const Fn fn = s.step.fn;
  if (fn != Fn::layernorm_forward && fn != Fn::layernorm_backward &&
      fn != Fn::layernorm_backward_params && fn != Fn::layernorm_invstd_forward &&
      fn != Fn::layernorm_invstd_backward)
    return {};
  const auto t = common_dtype(s);
  const auto l = common_layout(s);
  if (!t || !l) return {};
  const Ncs g = ncs(s.shape("x"));
  if (!fits_int(g.c) || !fits_int(g.s) || !fits_int(g.n * g.s)) return {};
  if (s.has("mean") != s.has("invstd")) return {};
  if (fn == Fn::layernorm_backward_params) return {per_channel(s, *t, *l)};
  return {per_position(s, *t, *l)};
}

} // namespace kiln::dense
