// templates/elementwise/channel_move.cuh, seen from the generator: the shuffle, the slice
// and the slice's gradient are one gather of whole channels.
#include "generator/select/families/dense/channel_move.hpp"

#include "generator/select/families/dense/dense_common.hpp"
#include "generator/select/families/launch_shape.hpp"

#include <fmt/format.h>

namespace kiln::dense {

namespace {

constexpr int64_t kThreads = 256;

} // namespace

std::vector<Variant> ChannelMoveFamily::candidates(const StepInfo& s) const {
  const Fn fn = s.step.fn;
  const bool shuffle = fn == Fn::channel_shuffle_forward || fn == Fn::channel_shuffle_backward;
  const bool slice = fn == Fn::channel_slice_forward;
  const bool place = fn == Fn::channel_slice_backward;
  if (!shuffle && !slice && !place) return {};
  const auto t = common_dtype(s);
  const auto l = common_layout(s);
  if (!t || !l) return {};
  const bool fwd = fn == Fn::channel_shuffle_forward || slice;
  const Shape& in = s.shape(fwd ? "x" : "dy");
  const Shape& out = s.shape(fwd ? "y" : "dx");
  const Ncs gi = ncs(in), go = ncs(out);
  if (!fits_int(gi.c) || !fits_int(go.c) || gi.s != go.s || gi.n != go.n) return {};
  const bool last = channels_last(in, *l);
  if (channels_last(out, *l) != last) return {};
  const Attrs& a = s.step.attrs;
  // The shuffle's gradient is the shuffle with C / groups groups.
  const int64_t groups = !shuffle ? 1
                         : fn == Fn::channel_shuffle_forward
                             ? a.groups
                             : gi.c / std::max<int64_t>(1, a.groups);
  const bool acc = s.step.accumulate && !slice;
  const std::string mode = shuffle ? "shuffle" : slice ? "slice" : "place";
  const std::string what = shuffle ? fmt::format("g{}", groups) : fmt::format("at{}", a.begin);
  Variant v;
  v.family = "channel_move";
  v.header = "elementwise/channel_move.cuh";
  v.function = "kiln::elementwise::channel_move";
  v.name =
      fmt::format("channel_{}_{}_{}_{}_to{}_{}{}_t{}_{}", mode, dtype_tag(*t), layout_tag(in, *l),
                  shape_tag(in), go.c, what, acc ? "_acc" : "", kThreads, s.arch_tag());
  cfg_type(v, "T", cpp_type(*t));
  cfg_int(v, "N", gi.n);
  cfg_int(v, "IN_C", gi.c);
  cfg_int(v, "OUT_C", go.c);
  cfg_int(v, "S", gi.s);
  cfg_bool(v, "CHANNELS_LAST", last);
  cfg_enum(v, "MODE", "kiln::elementwise::ChannelMove", mode);
  cfg_int(v, "G", groups);
  cfg_int(v, "BEGIN", shuffle ? 0 : a.begin);
  cfg_bool(v, "ACCUMULATE", acc);
  cfg_int(v, "THREADS", kThreads);
  v.args = fwd ? std::vector<std::string>{"x", "y"} : std::vector<std::string>{"dy", "dx"};
  const int64_t count = numel(out);
  v.block = {kThreads, 1, 1};
  v.grid = {grid_stride_blocks(s.gpu, count, kThreads), 1, 1};
  v.registers_per_thread = 32;
  v.bytes = double(count) * double(dtype_size(*t)) * (acc ? 3 : 2);
  // Channel-major: runs of S contiguous elements per channel; channels-last gathers
  // scattered channels within a position (partial lines when channels are few).
  v.efficiency = 0.6;
  v.note = "one thread per output element in its memory order, gathering whole channels";
  v.layouts = layouts_of(s, *l);
  return {v};
}

} // namespace kiln::dense
