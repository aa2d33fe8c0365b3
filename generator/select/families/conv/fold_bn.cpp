// templates/conv/fold_bn.cuh seen from the generator.
#include "generator/select/families/conv/conv_families.hpp"
#include "generator/select/families/conv/conv_geometry.hpp"
#include "generator/select/families/launch_shape.hpp"

#include <fmt/format.h>

namespace kiln {

using namespace conv_family;

std::vector<Variant> ConvFoldBnFamily::candidates(const StepInfo& s) const {
  const Step& st = s.step;
  if (st.fn != Fn::conv2d_fold_bn || !uniform_storage(s) || s.layout("w") != Layout::nchw)
    return {};
  const Shape& w = s.shape("w");
  const Layout out_layout = s.layout("w_out");
  const bool bias = s.has("b");
  const DType t = s.dtype("w");
  const int64_t count = numel(w), threads = 256;
  Variant v;
  v.family = "conv2d_fold_bn";
  v.header = "conv/fold_bn.cuh";
  v.function = "kiln::conv::fold_bn";
  const bool tf32 = s.arg("w_out").tf32; // rounded for tf32 tensor-core readers
  v.name = fmt::format("conv2d_fold_bn_{}_{}_o{}i{}k{}x{}{}_eps{}{}_t{}_{}", dtype_tag(t),
                       layout_name(out_layout), w[0], w[1], w[2], w[3], bias ? "_bias" : "",
                       name_number(st.fold_bn().eps), tf32 ? "_tf32" : "", threads, s.arch_tag());
  cfg_type(v, "T", cpp_type(t));
  cfg_int(v, "O", w[0]);
  cfg_int(v, "I", w[1]);
  cfg_int(v, "KH", w[2]);
  cfg_int(v, "KW", w[3]);
  cfg_bool(v, "OUT_NHWC", out_layout == Layout::nhwc);
  cfg_bool(v, "HAS_BIAS", bias);
  cfg_float(v, "EPS", st.fold_bn().eps);
  cfg_int(v, "THREADS", threads);
  cfg_bool(v, "ROUND_TF32", tf32);
  v.args = {"w"};
  if (bias) v.args.push_back("b");
  for (const char* r : {"weight", "bias", "running_mean", "running_var", "w_out", "b_out"})
    v.args.push_back(r);
  v.grid = {grid_stride_blocks(s.gpu, count, threads), 1, 1};
  v.block = {threads, 1, 1};
  v.registers_per_thread = 32;
  v.bytes = double(dtype_size(t)) * double(2 * count + (bias ? 6 : 5) * w[0]);
  v.flops = double(count) * 3;
  v.efficiency = out_layout == Layout::nchw ? 0.8 : 0.5; // OHWI reads w with a stride
  v.math = Math::fp32;
  v.note = "one w_out element per thread in w_out's memory order";
  v.layouts = {{"w", Layout::nchw}, {"w_out", out_layout}};
  return {v};
}

} // namespace kiln
