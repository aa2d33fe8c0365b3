// templates/elementwise/elementwise.cuh and convert.cuh, seen from the generator.
#include "generator/select/families/elementwise.hpp"

#include "generator/select/epilogue.hpp"
#include "generator/select/families/launch_shape.hpp"
#include "runtime/ops/registry.hpp"

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

// SGD with weight decay or momentum, and Adam (elementwise.cuh's optimizer_update):
// parameters and gradients of one float type, optimizer state in f32.
std::vector<Variant> optimizer_candidates(const StepInfo& s) {
  const Step& st = s.step;
  const bool adam = st.fn == Fn::adam_update;
  const DType t = s.dtype("param");
  if (t == DType::f64 || s.dtype("grad") != t || s.layout("grad") != s.layout("param")) return {};
  std::vector<std::string> args = {"param", "grad"};
  if (adam) args.insert(args.end(), {"m", "v", "step"});
  if (!adam && st.arg("velocity") >= 0) args.push_back("velocity");
  for (size_t k = 2; k < args.size(); ++k)
    if (args[k] != "step" &&
        (s.dtype(args[k]) != DType::f32 || s.layout(args[k]) != s.layout("param")))
      return {};
  const int64_t count = numel(s.shape("param"));
  Variant v;
  v.family = "elementwise";
  v.header = "elementwise/elementwise.cuh";
  v.function = "kiln::elementwise::elementwise";
  const double lr = adam ? st.adam().lr : st.sgd().lr;
  const double weight_decay = adam ? st.adam().weight_decay : st.sgd().weight_decay;
  const std::string hyper =
      adam ? fmt::format("_lr{}_b{}_{}_e{}_wd{}", name_number(lr), name_number(st.adam().beta1),
                         name_number(st.adam().beta2), name_number(st.adam().eps),
                         name_number(weight_decay))
           : fmt::format("_lr{}_wd{}_m{}", name_number(lr), name_number(weight_decay),
                         name_number(st.sgd().momentum));
  v.name = fmt::format("elementwise_{}_{}_c{}{}_t{}_{}", adam ? "adam" : "sgd_decay", dtype_tag(t),
                       count, hyper, kThreads, s.arch_tag());
  cfg_type(v, "T", cpp_type(t));
  cfg_int(v, "OP", adam ? 7 : 6);
  cfg_int(v, "COUNT", count);
  cfg_int(v, "INPUTS", int(args.size()) - 1);
  cfg_bool(v, "ACCUMULATE", false);
  cfg_float(v, "LR", lr);
  cfg_float(v, "WD", weight_decay);
  if (adam) {
    cfg_float(v, "BETA1", st.adam().beta1);
    cfg_float(v, "BETA2", st.adam().beta2);
    cfg_float(v, "EPS", st.adam().eps);
  } else {
    cfg_float(v, "MOMENTUM", st.sgd().momentum);
  }
  cfg_int(v, "THREADS", kThreads);
  v.args = args;
  v.block = {kThreads, 1, 1};
  v.grid = {grid_stride_blocks(s.gpu, count, kThreads), 1, 1};
  v.registers_per_thread = 32;
  const double esize = double(dtype_size(t));
  // param read and written, grad read; each float of state read and written.
  const double state = adam ? 2 : st.arg("velocity") >= 0 ? 1 : 0;
  v.bytes = double(count) * (3 * esize + 8 * state);
  v.flops = double(count) * (adam ? 12 : 4);
  v.efficiency = 0.8;
  v.note = "grid-stride loop, one element per thread per step; Adam's bias corrections once "
           "per thread from the step count in device memory";
  return {v};
}

// mse.forward (one block: the loss is one deterministic sum) and mse.backward (grid-stride)
// of elementwise/mse_loss.cuh.
std::vector<Variant> mse_candidates(const StepInfo& s) {
  const Step& st = s.step;
  const bool fwd = st.fn == Fn::mse_forward;
  if (!uniform(s)) return {};
  const DType t = s.dtype("logits");
  const int64_t count = numel(s.shape("logits"));
  const bool acc = !fwd && st.accumulate;
  // forward: as many threads as the elements need (whole warps), up to 1024.
  int64_t threads = kThreads;
  if (fwd) {
    threads = 128;
    while (threads < 1024 && threads < count)
      threads *= 2;
  }
  Variant v;
  v.family = "mse_loss";
  v.header = "elementwise/mse_loss.cuh";
  v.function = fwd ? "kiln::elementwise::mse_forward" : "kiln::elementwise::mse_backward";
  v.name = fmt::format("mse_{}_{}_c{}{}_t{}_{}", fwd ? "forward" : "backward", dtype_tag(t), count,
                       acc ? "_acc" : "", threads, s.arch_tag());
  cfg_type(v, "T", cpp_type(t));
  cfg_int(v, "COUNT", count);
  cfg_int(v, "THREADS", threads);
  cfg_bool(v, "ACCUMULATE", acc);
  v.args = fwd ? std::vector<std::string>{"logits", "target", "loss"}
               : std::vector<std::string>{"logits", "target", "dlogits"};
  v.block = {threads, 1, 1};
  v.grid = {fwd ? 1 : grid_stride_blocks(s.gpu, count, threads), 1, 1};
  v.static_smem = fwd ? 4 * threads / 32 : 0;
  v.registers_per_thread = 24;
  const double esize = double(dtype_size(t));
  v.bytes = double(count) * esize * (fwd ? 2 : acc ? 4 : 3);
  v.flops = 3.0 * double(count);
  v.efficiency = fwd ? 0.5 : 0.8;
  v.note = fwd ? "one block (the loss is one deterministic sum): per-thread partials in element "
                 "order, block tree sum"
               : "grid-stride elementwise 2 (logits - target) / elements";
  return {v};
}

} // namespace

std::vector<Variant> ElementwiseFamily::candidates(const StepInfo& s) const {
  const Step& st = s.step;
  if (st.fn == Fn::adam_update ||
      (st.fn == Fn::sgd_update && (st.sgd().weight_decay != 0 || st.arg("velocity") >= 0)))
    return optimizer_candidates(s);
  if (st.fn == Fn::mse_forward || st.fn == Fn::mse_backward) return mse_candidates(s);
  std::string op;
  int op_code = 0, inputs = 1;
  std::vector<std::string> args;
  // The activations of elementwise.cuh's ACTIVATION ops: the forward function's, with the
  // step's attributes (clip's bounds, hardsigmoid's alpha and beta).
  Activation act = Activation::none;
  const auto activation_step = [&](Fn forward, bool backward) {
    act = fn_def(forward).activation(st.attrs);
    op = activation_tag(act).substr(1) + (backward ? "_backward" : "");
    op_code = backward ? 11 : 10;
    inputs = backward ? 2 : 1;
    args =
        backward ? std::vector<std::string>{"x", "dy", "dx"} : std::vector<std::string>{"x", "y"};
  };
  switch (st.fn) {
  case Fn::clip_forward:
  case Fn::hardsigmoid_forward:
  case Fn::sigmoid_forward:
  case Fn::silu_forward:
  case Fn::gelu_forward:
  case Fn::gelu_tanh_forward:
  case Fn::hardswish_forward: activation_step(st.fn, false); break;
  case Fn::hardswish_backward: activation_step(Fn::hardswish_forward, true); break;
  case Fn::clip_backward: activation_step(Fn::clip_forward, true); break;
  case Fn::hardsigmoid_backward: activation_step(Fn::hardsigmoid_forward, true); break;
  case Fn::sigmoid_backward: activation_step(Fn::sigmoid_forward, true); break;
  case Fn::silu_backward: activation_step(Fn::silu_forward, true); break;
  case Fn::gelu_backward: activation_step(Fn::gelu_forward, true); break;
  case Fn::gelu_tanh_backward: activation_step(Fn::gelu_tanh_forward, true); break;
  case Fn::mul_forward: op = "mul", op_code = 12, inputs = 2, args = {"x0", "x1", "y"}; break;
  case Fn::mul_backward:
    if (s.arg("dx").shape == s.arg("dy").shape)
      op = "mul_backward", op_code = 13, inputs = 2, args = {"dy", "x", "dx"};
    else // the broadcast input's gradient: a sum over H, W per (n, c)
      op = "mul_reduce", op_code = 14, inputs = 2, args = {"x", "dy", "dx"};
    break;
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
      (st.fn == Fn::relu_forward || st.fn == Fn::hardswish_forward || st.fn == Fn::add_forward ||
       st.fn == Fn::fill_zero || op_code == 10 || op_code == 12))
    return {};
  const Buffer& out = s.plan.buffers[st.need(args.back())];
  const DType t = int_zero ? DType::f32 : out.dtype;
  const int64_t count = numel(out.shape);
  const int64_t esize = int64_t(dtype_size(t));
  // 16-byte packs (the template's VEC) where every argument is a contiguous run starting
  // 16-byte aligned (the arena aligns buffers to 256 bytes; a view may start anywhere) and the
  // op is one element out of elements in.
  bool packable =
      (op_code <= 5 || op_code == 10 || op_code == 11 || op_code == 12 || op_code == 13) &&
      count % (16 / esize) == 0;
  for (const Arg& g : st.args) {
    const Buffer& b = s.plan.buffers[g.buffer];
    packable = packable && b.view_pitch == 0 && b.view_offset * esize % 16 == 0;
  }
  if (op_code == 12 || op_code == 13) // mul: the operands of one shape (no broadcast)
    packable = packable &&
               s.plan.buffers[st.need(args[0])].shape == s.plan.buffers[st.need(args[1])].shape;
  std::vector<Variant> out_variants;
  std::vector<int64_t> vecs = {1};
  if (packable) vecs.push_back(16 / esize);
  for (int64_t vec : vecs) {
    Variant v;
    v.family = "elementwise";
    v.header = "elementwise/elementwise.cuh";
    v.function = "kiln::elementwise::elementwise";
    v.name = fmt::format("elementwise_{}_{}_c{}{}{}{}_t{}_{}", op, dtype_tag(t), count,
                         st.accumulate ? "_acc" : "",
                         st.fn == Fn::sgd_update ? "_lr" + name_number(st.sgd().lr) : "",
                         vec > 1 ? fmt::format("_v{}", vec) : "", kThreads, s.arch_tag());
    cfg_type(v, "T", cpp_type(t));
    cfg_int(v, "OP", op_code);
    cfg_int(v, "COUNT", count);
    cfg_int(v, "INPUTS", inputs);
    cfg_bool(v, "ACCUMULATE", st.accumulate);
    cfg_float(v, "LR", st.fn == Fn::sgd_update ? st.sgd().lr : 0);
    cfg_int(v, "THREADS", kThreads);
    if (vec > 1) cfg_int(v, "VEC", vec);
    if (op_code == 10 || op_code == 11) cfg_activation(v, act);
    if (op_code >= 12) { // mul's broadcast: the full operand's H * W and C, and the layout
      const Shape& full = s.plan.buffers[st.need(op_code == 12 ? "x0" : "dy")].shape;
      const Shape& other = s.plan.buffers[st.need(op_code == 12 ? "x1" : "x")].shape;
      const bool spread = op_code == 14 || other != full;
      cfg_int(v, "BCAST_HW", spread ? full[2] * full[3] : 1);
      cfg_int(v, "BCAST_C", spread ? full[1] : 1);
      cfg_bool(v, "NHWC", s.layout(args.back()) == Layout::nhwc);
      if (spread) // the geometry is compiled in: two layers of one size but another C differ
        v.name += fmt::format("_bc{}x{}{}", full[1], full[2] * full[3],
                              s.layout(args.back()) == Layout::nhwc ? "_nhwc" : "");
    }
    v.args = args;
    v.block = {kThreads, 1, 1};
    v.grid = {grid_stride_blocks(s.gpu, count / vec, kThreads), 1, 1};
    v.registers_per_thread = vec > 1 ? 40 : 24;
    v.bytes = double(count * esize * (inputs + 1 + (st.accumulate ? 1 : 0)));
    v.flops = double(count * inputs);
    // One 2-byte element a thread: an H100 ran resnet50's ReLU backward and residual adds at
    // 0.48 and 0.68 of its DRAM bandwidth (bench/results/h100_2026-11-27c); 16-byte packs
    // stated, unmeasured.
    v.efficiency = vec == 1 && esize == 2 ? 0.55 : 0.8;
    v.note = vec > 1 ? fmt::format("grid-stride loop, {} elements per thread per step as 16-byte "
                                   "packs",
                                   vec)
                     : "grid-stride loop, one element per thread per step";
    out_variants.push_back(std::move(v));
  }
  return out_variants;
}

std::vector<Variant> RegionCopyFamily::candidates(const StepInfo& s) const {
  const Step& st = s.step;
  if (st.fn != Fn::region_copy) return {};
  const Buffer& src = s.arg("src");
  const Buffer& dst = s.arg("dst");
  if (src.dtype != dst.dtype || src.dtype == DType::f64) return {};
  const Shape& a = src.shape;
  const Shape& b = dst.shape;
  const Region& r = st.region();
  const int64_t count = a[0] * a[1] * r.size[0] * r.size[1];
  Variant v;
  v.family = "region_copy";
  v.header = "elementwise/region_copy.cuh";
  v.function = "kiln::elementwise::region_copy";
  const std::string layouts =
      src.layout == dst.layout
          ? std::string(layout_name(src.layout))
          : fmt::format("{}_to_{}", layout_name(src.layout), layout_name(dst.layout));
  const std::string step =
      r.step == Int2{1, 1} ? "" : fmt::format("_step{}x{}", r.step[0], r.step[1]);
  v.name = fmt::format("region_copy_{}_{}_n{}c{}_{}x{}at{}x{}_to_{}x{}at{}x{}_e{}x{}{}{}_t{}_{}",
                       dtype_tag(src.dtype), layouts, a[0], a[1], a[2], a[3], r.src[0], r.src[1],
                       b[2], b[3], r.dst[0], r.dst[1], r.size[0], r.size[1], step,
                       st.accumulate ? "_acc" : "", kThreads, s.arch_tag());
  cfg_type(v, "T", cpp_type(src.dtype));
  for (auto [k, x] : {std::pair{"N", a[0]},
                      {"C", a[1]},
                      {"SH", a[2]},
                      {"SW", a[3]},
                      {"DH", b[2]},
                      {"DW", b[3]},
                      {"SRC_H0", r.src[0]},
                      {"SRC_W0", r.src[1]},
                      {"DST_H0", r.dst[0]},
                      {"DST_W0", r.dst[1]},
                      {"EH", r.size[0]},
                      {"EW", r.size[1]},
                      {"DST_SH", r.step[0]},
                      {"DST_SW", r.step[1]}})
    cfg_int(v, k, x);
  cfg_bool(v, "SRC_NHWC", src.layout == Layout::nhwc);
  cfg_bool(v, "DST_NHWC", dst.layout == Layout::nhwc);
  cfg_bool(v, "ACCUMULATE", st.accumulate);
  cfg_int(v, "THREADS", kThreads);
  v.args = {"src", "dst"};
  v.block = {kThreads, 1, 1};
  v.grid = {grid_stride_blocks(s.gpu, count, kThreads), 1, 1};
  v.registers_per_thread = 32;
  v.bytes = double(count * int64_t(dtype_size(src.dtype)) * (st.accumulate ? 3 : 2));
  v.efficiency = 0.6;
  v.note = "one window element per thread, in dst's memory order";
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
  // A weight rounded for tf32 tensor-core readers (Buffer::tf32).
  v.name = fmt::format("convert_{}{}_to_{}{}_n{}c{}h{}w{}{}_t{}_{}", dtype_tag(src.dtype),
                       layout_name(src.layout), dtype_tag(dst.dtype), layout_name(dst.layout),
                       sh[0], sh[1], sh[2], sh[3], dst.tf32 ? "_tf32" : "", kThreads, s.arch_tag());
  cfg_type(v, "TI", cpp_type(src.dtype));
  cfg_type(v, "TO", cpp_type(dst.dtype));
  cfg_int(v, "N", sh[0]);
  cfg_int(v, "C", sh[1]);
  cfg_int(v, "H", sh[2]);
  cfg_int(v, "W", sh[3]);
  cfg_bool(v, "IN_NHWC", src.layout == Layout::nhwc);
  cfg_bool(v, "OUT_NHWC", dst.layout == Layout::nhwc);
  cfg_int(v, "THREADS", kThreads);
  cfg_bool(v, "ROUND_TF32", dst.tf32);
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
