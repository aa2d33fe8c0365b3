// templates/elementwise/elementwise.cuh and convert.cuh, seen from the generator.
#include "generator/select/families/elementwise.hpp"

#include "generator/select/families/launch_shape.hpp"

#include <fmt/format.h>

namespace kiln {

namespace {

constexpr int64_t kThreads = 256;

// All arguments of the step share one float dtype and one layout.
bool uniform(const StepInfo& s) {
  const Buffer& first = s.plan.buffers[s.step.args.front().buffer];
  for (const Arg& a : s.step.args) {
    const Buffer& b = s.plan.buffers[a.buffer];
    if (b.dtype != first.dtype || b.layout != first.layout || b.dtype == DType::f64) return false;
  }
  return true;
}

} // namespace

std::vector<Variant> ElementwiseFamily::candidates(const StepInfo& s) const {
  const Step& st = s.step;
  std::string op;
  int op_code = 0, inputs = 1;
  std::vector<std::string> args;
  switch (st.fn) {
  case Fn::relu_forward: op = "relu", op_code = 0, args = {"x", "y"}; break;
  case Fn::relu_backward:
    op = "relu_backward", op_code = 1, inputs = 2, args = {"y", "dy", "dx"};
    break;
  case Fn::add_forward: {
    const auto xs = st.variadic('x');
    if (xs.size() > 8) return {};
    inputs = int(xs.size());
    op = fmt::format("add{}", inputs), op_code = 2;
    for (size_t k = 0; k < xs.size(); ++k)
      args.push_back(fmt::format("x{}", k));
    args.push_back("y");
    break;
  }
  case Fn::copy: op = "copy", op_code = 3, args = {"src", "dst"}; break;
  case Fn::sgd_update: op = "sgd", op_code = 4, inputs = 2, args = {"param", "grad"}; break;
  case Fn::fill_zero: op = "fill_zero", op_code = 5, inputs = 0, args = {"dst"}; break;
  default: return {};
  }
  // A relu that compacts its output is conv/sparse_compact.cuh's (families/sparse); an
  // integer count is zeroed as 32-bit words (one float zero is all-zero bits).
  if (st.arg("y_values") >= 0) return {};
  const bool int_zero = st.fn == Fn::fill_zero && s.dtype("dst") == DType::i32;
  if ((!int_zero && !uniform(s)) || (st.fn == Fn::copy && s.layout("src") != s.layout("dst")))
    return {};
  if (st.accumulate &&
      (st.fn == Fn::relu_forward || st.fn == Fn::add_forward || st.fn == Fn::fill_zero))
    return {};
  const Buffer& out = s.plan.buffers[st.need(args.back())];
  const DType t = int_zero ? DType::f32 : out.dtype;
  const int64_t count = numel(out.shape);
  Variant v;
  v.family = "elementwise";
  v.header = "elementwise/elementwise.cuh";
  v.function = "kiln::elementwise::elementwise";
  v.name = fmt::format(
      "elementwise_{}_{}_c{}{}{}_t{}_{}", op, dtype_tag(t), count, st.accumulate ? "_acc" : "",
      st.fn == Fn::sgd_update ? "_lr" + name_number(st.lr) : "", kThreads, s.arch_tag());
  cfg_type(v, "T", cpp_type(t));
  cfg_int(v, "OP", op_code);
  cfg_int(v, "COUNT", count);
  cfg_int(v, "INPUTS", inputs);
  cfg_bool(v, "ACCUMULATE", st.accumulate);
  cfg_float(v, "LR", st.lr);
  cfg_int(v, "THREADS", kThreads);
  v.args = args;
  v.block = {kThreads, 1, 1};
  v.grid = {grid_stride_blocks(s.gpu, count, kThreads), 1, 1};
  v.registers_per_thread = 24;
  const int64_t esize = int64_t(dtype_size(t));
  v.bytes = double(count * esize * (inputs + 1 + (st.accumulate ? 1 : 0)));
  v.flops = double(count * inputs);
  v.efficiency = 0.8;
  v.note = "grid-stride loop, one element per thread per step";
  return {v};
}

std::vector<Variant> RegionCopyFamily::candidates(const StepInfo& s) const {
  const Step& st = s.step;
  if (st.fn != Fn::region_copy) return {};
  const Buffer& src = s.arg("src");
  const Buffer& dst = s.arg("dst");
  if (src.dtype != dst.dtype || src.layout != dst.layout || src.dtype == DType::f64) return {};
  const Shape& a = src.shape;
  const Shape& b = dst.shape;
  const int64_t count = a[0] * a[1] * st.extent[0] * st.extent[1];
  Variant v;
  v.family = "region_copy";
  v.header = "elementwise/region_copy.cuh";
  v.function = "kiln::elementwise::region_copy";
  v.name = fmt::format("region_copy_{}_{}_n{}c{}_{}x{}at{}x{}_to_{}x{}at{}x{}_e{}x{}{}_t{}_{}",
                       dtype_tag(src.dtype), layout_name(src.layout), a[0], a[1], a[2], a[3],
                       st.src_origin[0], st.src_origin[1], b[2], b[3], st.dst_origin[0],
                       st.dst_origin[1], st.extent[0], st.extent[1], st.accumulate ? "_acc" : "",
                       kThreads, s.arch_tag());
  cfg_type(v, "T", cpp_type(src.dtype));
  for (auto [k, x] : {std::pair{"N", a[0]},
                      {"C", a[1]},
                      {"SH", a[2]},
                      {"SW", a[3]},
                      {"DH", b[2]},
                      {"DW", b[3]},
                      {"SRC_H0", st.src_origin[0]},
                      {"SRC_W0", st.src_origin[1]},
                      {"DST_H0", st.dst_origin[0]},
                      {"DST_W0", st.dst_origin[1]},
                      {"EH", st.extent[0]},
                      {"EW", st.extent[1]}})
    cfg_int(v, k, x);
  cfg_bool(v, "NHWC", src.layout == Layout::nhwc);
  cfg_bool(v, "ACCUMULATE", st.accumulate);
  cfg_int(v, "THREADS", kThreads);
  v.args = {"src", "dst"};
  v.block = {kThreads, 1, 1};
  v.grid = {grid_stride_blocks(s.gpu, count, kThreads), 1, 1};
  v.registers_per_thread = 32;
  v.bytes = double(count * int64_t(dtype_size(src.dtype)) * (st.accumulate ? 3 : 2));
  v.efficiency = 0.6;
  v.note = "one window element per thread, memory order";
  return {v};
}

std::vector<Variant> ConvertFamily::candidates(const StepInfo& s) const {
  if (s.step.fn != Fn::convert) return {};
  const Buffer& src = s.arg("src");
  const Buffer& dst = s.arg("dst");
  if (src.dtype == DType::f64 || dst.dtype == DType::f64) return {};
  Shape sh = src.shape;
  if (sh.size() != 4) sh = {numel(sh), 1, 1, 1};
  const int64_t count = numel(sh);
  Variant v;
  v.family = "convert";
  v.header = "elementwise/convert.cuh";
  v.function = "kiln::elementwise::convert";
  v.name = fmt::format("convert_{}{}_to_{}{}_n{}c{}h{}w{}_t{}_{}", dtype_tag(src.dtype),
                       layout_name(src.layout), dtype_tag(dst.dtype), layout_name(dst.layout),
                       sh[0], sh[1], sh[2], sh[3], kThreads, s.arch_tag());
  cfg_type(v, "TI", cpp_type(src.dtype));
  cfg_type(v, "TO", cpp_type(dst.dtype));
  cfg_int(v, "N", sh[0]);
  cfg_int(v, "C", sh[1]);
  cfg_int(v, "H", sh[2]);
  cfg_int(v, "W", sh[3]);
  cfg_bool(v, "IN_NHWC", src.layout == Layout::nhwc);
  cfg_bool(v, "OUT_NHWC", dst.layout == Layout::nhwc);
  cfg_int(v, "THREADS", kThreads);
  v.args = {"src", "dst"};
  v.block = {kThreads, 1, 1};
  v.grid = {grid_stride_blocks(s.gpu, count, kThreads), 1, 1};
  v.registers_per_thread = 24;
  v.bytes = double(count * int64_t(dtype_size(src.dtype) + dtype_size(dst.dtype)));
  v.flops = 0;
  v.efficiency = src.layout == dst.layout ? 0.8 : 0.4; // transposes read with a stride
  v.note = "one output element per thread, output order";
  return {v};
}

} // namespace kiln
