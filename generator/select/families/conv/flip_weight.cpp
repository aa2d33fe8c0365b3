// templates/conv/flip_weight.cuh seen from the generator.
#include "generator/select/families/conv/conv_families.hpp"
#include "generator/select/families/conv/conv_geometry.hpp"
#include "generator/select/families/launch_shape.hpp"

#include <fmt/format.h>

namespace kiln {

using namespace conv_family;

std::vector<Variant> ConvFlipWeightFamily::candidates(const StepInfo& s) const {
  const Step& st = s.step;
  if (st.fn != Fn::conv2d_flip_weight || !uniform_storage(s) || s.layout("w") != Layout::nchw)
    return {};
  const Shape& w = s.shape("w");
  const Shape& wo = s.shape("w_out");
  const FlipTaps& taps = st.flip_taps();
  const Layout out_layout = s.layout("w_out");
  const DType t = s.dtype("w");
  const int64_t count = numel(wo), threads = 256;
  // Every tap (a stride-1 conv's) names as it always did; a phase's taps say which.
  const std::string phase =
      taps == FlipTaps{} && wo[2] == w[2] && wo[3] == w[3]
          ? ""
          : fmt::format("_taps{}x{}from{}x{}by{}x{}", wo[2], wo[3], taps.first[0], taps.first[1],
                        taps.step[0], taps.step[1]);
  Variant v;
  v.family = "conv2d_flip_weight";
  v.header = "conv/flip_weight.cuh";
  v.function = "kiln::conv::flip_weight";
  v.name =
      fmt::format("conv2d_flip_weight_{}_{}_o{}c{}k{}x{}{}_t{}_{}", dtype_tag(t),
                  layout_name(out_layout), w[0], w[1], w[2], w[3], phase, threads, s.arch_tag());
  cfg_type(v, "T", cpp_type(t));
  cfg_int(v, "O", w[0]);
  cfg_int(v, "C", w[1]);
  cfg_int(v, "KH", w[2]);
  cfg_int(v, "KW", w[3]);
  cfg_int(v, "TH", wo[2]);
  cfg_int(v, "TW", wo[3]);
  cfg_int(v, "FH", taps.first[0]);
  cfg_int(v, "FW", taps.first[1]);
  cfg_int(v, "SH", taps.step[0]);
  cfg_int(v, "SW", taps.step[1]);
  cfg_bool(v, "OUT_NHWC", out_layout == Layout::nhwc);
  cfg_int(v, "THREADS", threads);
  v.args = {"w", "w_out"};
  v.grid = {grid_stride_blocks(s.gpu, count, threads), 1, 1};
  v.block = {threads, 1, 1};
  v.registers_per_thread = 32;
  v.bytes = double(dtype_size(t)) * double(2 * count); // the taps kept, read and written
  v.flops = double(count);
  v.efficiency = 0.5; // w read with a stride
  v.math = Math::fp32;
  v.note = "one w_out element per thread in w_out's memory order";
  v.layouts = {{"w", Layout::nchw}, {"w_out", out_layout}};
  return {v};
}

} // namespace kiln
