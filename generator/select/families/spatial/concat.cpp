// templates/spatial/concat.cuh, seen from the generator.
#include "generator/select/families/launch_shape.hpp"
#include "generator/select/families/spatial/spatial_common.hpp"
#include "generator/select/families/spatial/spatial_families.hpp"

#include <algorithm>
#include <fmt/format.h>

namespace kiln {

using namespace spatial;

namespace {

// [N, C, H, W] or [N, C] as N, C and the spatial size S (1 for 2-D).
int64_t spatial_size(const Shape& s) { return s.size() == 4 ? s[2] * s[3] : 1; }

bool concat_indexable(const Shape& s) {
  if (s.size() == 4) return indexable(s);
  return s.size() == 2 && s[0] > 0 && s[1] > 0 && s[0] <= 2147483647LL && s[1] <= 2147483647LL;
}

// "n2h5w7" (4-D) or "n2" (2-D), and the layout tag ("nc" for 2-D).
std::string concat_shape_tag(const Shape& s) {
  return s.size() == 4 ? fmt::format("n{}h{}w{}", s[0], s[2], s[3]) : fmt::format("n{}", s[0]);
}

} // namespace

std::vector<Variant> ConcatFamily::candidates(const StepInfo& s) const {
  const Step& st = s.step;
  if (st.fn != Fn::concat_forward && st.fn != Fn::concat_backward) return {};
  const bool forward = st.fn == Fn::concat_forward, acc = st.accumulate;
  if (forward && acc) return {};
  const auto types = step_types(s, forward ? "y" : "dx");
  if (!types) return {};
  const Shape& full = s.shape(forward ? "y" : "dy");
  if (!concat_indexable(full) || full[1] * spatial_size(full) > 2147483647LL) return {};
  const bool image = full.size() == 4;
  const bool nhwc = image && types->layout == Layout::nhwc;
  const std::string layout = image ? layout_tag(types->layout) : "nc";
  const int64_t S = spatial_size(full), esize = int64_t(dtype_size(types->dtype));
  Variant v;
  if (forward) {
    // One kernel takes 16 arguments: up to 15 inputs and y. x0 goes at channel_offset (0
    // when the inputs fill y), the others after it.
    const std::vector<int> xs = st.variadic('x');
    if (xs.size() < 1 || xs.size() > 15) return {};
    std::string channels;
    std::vector<int64_t> c(15, 0);
    int64_t largest = 0, sum = 0;
    for (size_t k = 0; k < xs.size(); ++k) {
      c[k] = s.plan.buffers[xs[k]].shape[1];
      sum += c[k];
      channels += fmt::format("c{}", c[k]);
      largest = std::max(largest, numel(s.plan.buffers[xs[k]].shape));
    }
    if (st.channel_slice().offset < 0 || st.channel_slice().offset + sum > full[1]) return {};
    if (sum != full[1] || st.channel_slice().offset != 0)
      channels += fmt::format("of{}at{}", full[1], st.channel_slice().offset);
    v = make_variant(s, "concat", "spatial/concat.cuh", "kiln::spatial::concat_forward",
                     fmt::format("concat_fwd_{}_{}_{}_{}_t{}", dtype_tag(types->dtype), layout,
                                 concat_shape_tag(full), channels, kThreads));
    cfg_type(v, "T", cpp_type(types->dtype));
    cfg_int(v, "N", full[0]);
    cfg_int(v, "S", S);
    cfg_bool(v, "NHWC", nhwc);
    cfg_int(v, "CO", full[1]);
    cfg_int(v, "INPUTS", int64_t(xs.size()));
    for (int k = 0; k < 15; ++k)
      cfg_int(v, fmt::format("C{}", k), c[size_t(k)]);
    cfg_int(v, "OFFSET", st.channel_slice().offset);
    cfg_int(v, "THREADS", kThreads);
    for (size_t k = 0; k < xs.size(); ++k)
      v.args.push_back(fmt::format("x{}", k));
    v.args.push_back("y");
    v.block = {kThreads, 1, 1};
    // blockIdx.y picks the input: enough blocks for the largest, a grid-stride loop each.
    v.grid = {grid_stride_blocks(s.gpu, largest, kThreads), int64_t(xs.size()), 1};
    v.bytes = double(2 * sum * (numel(full) / full[1]) * esize);
    v.efficiency =
        0.8 * double(sum * (numel(full) / full[1])) / double(largest * int64_t(xs.size()));
    v.note = "one block row per input (blockIdx.y), one element per thread in input order, "
             "written into its channel slice";
  } else {
    const Shape& dx = s.shape("dx");
    v = make_variant(s, "concat", "spatial/concat.cuh", "kiln::spatial::concat_backward",
                     fmt::format("concat_bwd_{}_{}_{}_c{}of{}at{}{}_t{}", dtype_tag(types->dtype),
                                 layout, concat_shape_tag(full), dx[1], full[1],
                                 st.channel_slice().offset, acc ? "_acc" : "", kThreads));
    cfg_type(v, "T", cpp_type(types->dtype));
    cfg_int(v, "N", full[0]);
    cfg_int(v, "S", S);
    cfg_bool(v, "NHWC", nhwc);
    cfg_int(v, "CO", full[1]);
    cfg_int(v, "CI", dx[1]);
    cfg_int(v, "OFFSET", st.channel_slice().offset);
    cfg_bool(v, "ACCUMULATE", acc);
    cfg_int(v, "THREADS", kThreads);
    v.args = {"dy", "dx"};
    grid_stride(v, s, numel(dx));
    v.bytes = double(numel(dx) * (acc ? 3 : 2) * esize);
    v.efficiency = 0.8;
    v.note = "one dx element per thread in memory order, read from its channel slice of dy";
  }
  v.registers_per_thread = registers(s, 32, 32);
  v.flops = 0;
  if (image) require_layout(v, s, types->layout);
  return {v};
}

} // namespace kiln
