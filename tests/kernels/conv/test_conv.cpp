// The conv group's families (conv2d_direct, conv2d_depthwise, conv2d_fold_bn,
// conv2d_flip_weight, conv2d_backward_data (also serving conv_transpose2d.forward; NCHW and
// NHWC gradients), conv2d_backward_weight (both too; dw or its slices over positions),
// conv2d_backward_weight_mma (NHWC, on
// tensor cores, dw or its slices over positions), bias_backward): every variant compiles with NVRTC
// for sm_75, sm_80 and sm_90 without spilling, and matches the f64 reference on the emulator;
// conv2d_direct also with a max pool fused (conv2d.pool_forward).
#include "tests/kernels/harness.hpp"

#include "generator/emit/instance.hpp"

#include "runtime/op.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <chrono>
#include <set>

using namespace kiln;
using namespace kiln::test;

namespace {

const std::set<std::string> kFamilies = {"conv2d_direct",
                                         "conv2d_depthwise",
                                         "conv2d_fold_bn",
                                         "conv2d_flip_weight",
                                         "conv2d_backward_data",
                                         "conv2d_backward_weight",
                                         "conv2d_backward_weight_mma",
                                         "bias_backward"};

// One convolution: input [n, c, h, w] -> o channels.
struct Conv {
  int64_t n, c, h, w, o;
  Int2 k, s = {1, 1}, p = {0, 0}, d = {1, 1};
  int64_t groups = 1;

  Attrs attrs(bool bias) const {
    Attrs a;
    a.out_channels = o, a.kernel = k, a.stride = s, a.padding = p, a.dilation = d;
    a.groups = groups, a.bias = bias;
    return a;
  }
  Shape x() const { return {n, c, h, w}; }
  Shape wt() const { return {o, c / groups, k[0], k[1]}; }
  Shape y() const {
    return {n, o, window_out(h, k[0], s[0], p[0], d[0], false),
            window_out(w, k[1], s[1], p[1], d[1], false)};
  }
  std::string name() const {
    return fmt::format("{}x{}x{}x{}->{} k{}x{} s{}x{} p{}x{} d{}x{} g{}", n, c, h, w, o, k[0], k[1],
                       s[0], s[1], p[0], p[1], d[0], d[1], groups);
  }
};

enum Epi { kNone = 0, kBias = 1, kRes = 2, kRelu = 4, kHardswish = 8 };

StepSpec forward(const Conv& cv, DType t, Layout lay, int epi, Layout wlay = Layout::nchw) {
  StepSpec s;
  s.label = fmt::format("forward {} {} {}{}{}{}{}", cv.name(), dtype_name(t), layout_name(lay),
                        wlay == Layout::nhwc ? " w-ohwi" : "", epi & kBias ? " bias" : "",
                        epi & kRes ? " residual" : "",
                        epi & kRelu        ? " relu"
                        : epi & kHardswish ? " hardswish"
                                           : "");
  s.fn = Fn::conv2d_forward;
  s.op = OpKind::conv2d;
  s.attrs = cv.attrs(epi & kBias);
  s.args = {{"x", cv.x(), t, lay}, {"w", cv.wt(), t, wlay}};
  if (epi & kBias) s.args.push_back({"b", {cv.o}, t});
  if (epi & kRes) s.args.push_back({"residual", cv.y(), t, lay});
  s.args.push_back({"y", cv.y(), t, lay});
  s.epilogue.activation = epi & kRelu        ? Activation::relu
                          : epi & kHardswish ? Activation::hardswish
                                             : Activation::none;
  return s;
}

// The same step with another activation in its epilogue (clip's bounds and hardsigmoid's
// alpha and beta as ACT_P0 and ACT_P1).
StepSpec with(StepSpec s, Activation a) {
  s.label += " " + activation_label(a);
  s.epilogue.activation = a;
  return s;
}

// x stored NCHW while y is NHWC: a network's first conv reading its input (or a folded
// batch's view of it) in place.
StepSpec nchw_input(StepSpec s) {
  s.label += " x-nchw";
  s.args[0].layout = Layout::nchw;
  return s;
}

// A max pool's window, stride, padding and ceil_mode.
struct Pool {
  Int2 k, s, p = {0, 0};
  bool ceil = false;
  Attrs attrs() const {
    Attrs a;
    a.kernel = k, a.stride = s, a.padding = p, a.ceil_mode = ceil;
    return a;
  }
};

// conv2d.pool_forward: the conv (bias, relu) and the max pool after it, one step.
StepSpec pooled(const Conv& cv, const Pool& pl, DType t, Layout lay, int epi) {
  StepSpec s = forward(cv, t, lay, epi);
  s.label += fmt::format(" maxpool k{}x{} s{}x{} p{}x{}{}", pl.k[0], pl.k[1], pl.s[0], pl.s[1],
                         pl.p[0], pl.p[1], pl.ceil ? " ceil" : "");
  s.fn = Fn::conv2d_pool_forward;
  s.params = FusedPool{pl.attrs()};
  const Shape y = cv.y();
  s.args.back().shape = infer_shape(OpKind::maxpool2d, pl.attrs(), std::span<const Shape>(&y, 1));
  return s;
}

StepSpec backward_data(const Conv& cv, DType t, bool acc) {
  StepSpec s;
  s.label =
      fmt::format("backward_data {} {}{}", cv.name(), dtype_name(t), acc ? " accumulate" : "");
  s.fn = Fn::conv2d_backward_data;
  s.op = OpKind::conv2d;
  s.attrs = cv.attrs(false);
  s.args = {{"dy", cv.y(), t}, {"w", cv.wt(), t}, {"dx", cv.x(), t}};
  s.accumulate = acc;
  return s;
}

// conv_transpose2d.forward: the transposed conv whose conv is cv (its x is cv's y, its y cv's
// x plus output_padding rows and columns), the same gather as backward_data with a bias.
StepSpec transposed(const Conv& cv, DType t, bool bias, Int2 out_pad = {0, 0}) {
  StepSpec s;
  s.label = fmt::format("conv_transpose2d {} {}{} op{}x{}", cv.name(), dtype_name(t),
                        bias ? " bias" : "", out_pad[0], out_pad[1]);
  s.fn = Fn::conv_transpose2d_forward;
  s.op = OpKind::conv_transpose2d;
  Attrs a;
  a.out_channels = cv.c, a.kernel = cv.k, a.stride = cv.s, a.padding = cv.p, a.dilation = cv.d;
  a.groups = cv.groups, a.bias = bias, a.output_padding = out_pad;
  s.attrs = a;
  const Shape x = cv.y();
  s.args = {{"x", x, t}, {"w", cv.wt(), t}};
  if (bias) s.args.push_back({"b", {cv.c}, t});
  s.args.push_back(
      {"y", infer_shape(OpKind::conv_transpose2d, a, std::span<const Shape>(&x, 1)), t});
  return s;
}

// The transposed conv with its x and y NHWC (an NHWC plan: no conversions around it).
StepSpec nhwc_io(StepSpec s) {
  s.label += " nhwc";
  for (ArgSpec& a : s.args)
    if (a.role == "x" || a.role == "y") a.layout = Layout::nhwc;
  return s;
}

StepSpec backward_weight(const Conv& cv, DType t, bool acc) {
  StepSpec s;
  s.label =
      fmt::format("backward_weight {} {}{}", cv.name(), dtype_name(t), acc ? " accumulate" : "");
  s.fn = Fn::conv2d_backward_weight;
  s.op = OpKind::conv2d;
  s.attrs = cv.attrs(false);
  s.args = {{"x", cv.x(), t}, {"dy", cv.y(), t}, {"dw", cv.wt(), t}};
  s.accumulate = acc;
  return s;
}

// A training step's gradients channels-last (an NHWC training plan): x, dy and dx.
StepSpec nhwc_grads(StepSpec s) {
  s.label += " nhwc";
  for (ArgSpec& a : s.args)
    if (a.role == "x" || a.role == "dy" || a.role == "dx") a.layout = Layout::nhwc;
  return s;
}

// The weight gradient split over `slices` ranges of positions: fp32 slices of dw in `partial`.
StepSpec sliced(StepSpec s, int64_t slices) {
  s.label += fmt::format(" {} slices", slices);
  for (ArgSpec& a : s.args)
    if (a.role == "dw") {
      a.role = "partial";
      a.shape.insert(a.shape.begin(), slices);
      a.dtype = DType::f32;
    }
  return s;
}

// conv2d.flip_weight: cv's filters turned for its data gradient, w_out in `out`'s layout;
// with `taps` (TH x TW of them), one phase's of a strided conv: from `first` by its stride.
StepSpec flip_weight(const Conv& cv, DType t, Layout out, Int2 taps = {0, 0}, Int2 first = {0, 0}) {
  StepSpec s;
  s.label = fmt::format("flip_weight {} {} -> {} taps {}x{} from {}x{}", cv.name(), dtype_name(t),
                        layout_name(out), taps[0], taps[1], first[0], first[1]);
  s.fn = Fn::conv2d_flip_weight;
  s.op = OpKind::conv2d;
  s.attrs = cv.attrs(false);
  const Shape w = cv.wt();
  const bool phase = taps[0] > 0;
  s.args = {{"w", w, t},
            {"w_out", {w[1], w[0], phase ? taps[0] : w[2], phase ? taps[1] : w[3]}, t, out}};
  if (phase) s.params = FlipTaps{first, cv.s};
  return s;
}

StepSpec fold_bn(const Conv& cv, DType t, Layout out, bool bias, double eps) {
  StepSpec s;
  s.label = fmt::format("fold_bn {} {} -> {}{} eps {}", cv.name(), dtype_name(t), layout_name(out),
                        bias ? " bias" : "", eps);
  s.fn = Fn::conv2d_fold_bn;
  s.op = OpKind::conv2d;
  s.attrs = cv.attrs(bias);
  s.params = FoldBn{eps};
  s.args = {{"w", cv.wt(), t}};
  if (bias) s.args.push_back({"b", {cv.o}, t});
  for (const char* r : {"weight", "bias", "running_mean", "running_var"})
    s.args.push_back({r, {cv.o}, t});
  s.args.push_back({"w_out", cv.wt(), t, out});
  s.args.push_back({"b_out", {cv.o}, t});
  return s;
}

StepSpec bias_backward(const Shape& dy, DType t, bool acc) {
  StepSpec s;
  s.label =
      fmt::format("bias_backward {} {}{}", shape_str(dy), dtype_name(t), acc ? " accumulate" : "");
  s.fn = Fn::bias_backward;
  s.op = dy.size() == 4 ? OpKind::conv2d : OpKind::linear;
  s.args = {{"dy", dy, t}, {"db", {dy[1]}, t}};
  s.accumulate = acc;
  return s;
}

constexpr DType f32 = DType::f32, f16 = DType::f16, bf16 = DType::bf16;
constexpr Layout nchw = Layout::nchw, nhwc = Layout::nhwc;

// Convolutions the forward and backward kernels are checked on: strides 1, 2, 3 (and
// [h, w] pairs), padding 0, 1, 2 and pairs, kernels 1x1, 3x3, 5x5, 7x7, 3x1, 1x5,
// dilation 1 and 2, groups 1, 2, 4 and depthwise, odd spatial sizes, more channels than a
// block stages at once and than a block's channel tile.
const Conv k3{2, 4, 7, 9, 8, {3, 3}, {1, 1}, {1, 1}};
const Conv k5s2g2{1, 6, 13, 11, 6, {5, 5}, {2, 2}, {2, 2}, {1, 1}, 2};
const Conv k5s2{1, 6, 13, 11, 8, {5, 5}, {2, 2}, {2, 2}};
const Conv dw_d2{2, 8, 9, 7, 8, {3, 3}, {1, 1}, {2, 2}, {2, 2}, 8};
const Conv k7s2{1, 3, 13, 11, 5, {7, 7}, {2, 2}, {3, 3}};
const Conv k1{2, 16, 7, 9, 24, {1, 1}};
const Conv k3x1g4{1, 8, 7, 9, 12, {3, 1}, {1, 1}, {1, 0}, {1, 1}, 4};
const Conv k1x5s{1, 4, 7, 9, 4, {1, 5}, {1, 2}, {0, 2}};
const Conv k3s3{1, 5, 13, 11, 7, {3, 3}, {3, 3}, {0, 0}};
const Conv dw_mult{1, 4, 9, 7, 8, {3, 3}, {2, 2}, {1, 1}, {1, 1}, 4};
const Conv k3d2_wide{1, 3, 7, 9, 70, {3, 3}, {1, 1}, {2, 2}, {2, 2}};
const Conv k3_deep{1, 40, 7, 7, 20, {3, 3}, {1, 1}, {1, 1}};
const Conv k1s2{2, 8, 9, 7, 12, {1, 1}, {2, 2}};
const Conv k3s2_pair{1, 6, 11, 13, 10, {3, 3}, {2, 1}, {2, 1}, {1, 2}};
// Depthwise (conv2d_depthwise too): more channels than a block's channel tile, 5x5 stride 2,
// and a small late-network map.
const Conv dw3{2, 40, 9, 7, 40, {3, 3}, {1, 1}, {1, 1}, {1, 1}, 40};
const Conv dw5s2{1, 72, 13, 11, 72, {5, 5}, {2, 2}, {2, 2}, {1, 1}, 72};
const Conv dw3s2_small{2, 96, 4, 4, 96, {3, 3}, {2, 2}, {1, 1}, {1, 1}, 96};
// Stride and dilation sharing a factor: odd dx rows and columns take no tap at all.
const Conv s2d2{1, 4, 9, 11, 6, {3, 3}, {2, 2}, {2, 2}, {2, 2}};
// Stride 3, dilation 2: the taps of a stride phase read dy rows two apart.
const Conv s3d2{2, 3, 13, 11, 4, {3, 3}, {3, 3}, {1, 1}, {2, 2}};
// Channels not a multiple of 8 on tensor cores (conv2d_backward_weight_mma's GATHER): the
// stem's 7x7 stride 2 over 3 (147 columns: a partial last tile, every tile across taps), and
// 12 channels over a 3x3.
const Conv stem{2, 3, 19, 17, 16, {7, 7}, {2, 2}, {3, 3}};
const Conv c12{1, 12, 9, 9, 8, {3, 3}, {1, 1}, {1, 1}};

std::vector<StepSpec> forward_specs() {
  return {
      forward(k3, f32, nchw, kBias | kRelu),
      forward(k3, f32, nhwc, kRes),
      forward(s2d2, f16, nchw, kBias),
      forward(k3, bf16, nhwc, kBias | kRes | kRelu),
      forward(k5s2g2, f16, nchw, kBias | kRes | kRelu),
      forward(dw_d2, bf16, nhwc, kBias | kRelu),
      forward(k7s2, f32, nchw, kBias),
      forward(k1, f32, nchw, kNone),
      forward(k3x1g4, f16, nhwc, kBias),
      forward(k1x5s, bf16, nchw, kRes | kRelu),
      forward(k3s3, f32, nhwc, kRelu),
      forward(dw_mult, f32, nchw, kBias | kRes),
      forward(k3d2_wide, f16, nchw, kBias | kRelu),
      forward(k3_deep, f32, nchw, kBias | kRes | kRelu),
      forward(k1s2, bf16, nhwc, kNone),
      forward(k3s2_pair, f32, nhwc, kBias, nhwc),
      forward(k3, f16, nchw, kRes, nhwc),
      nchw_input(forward(k7s2, f32, nhwc, kBias | kRelu)),
      nchw_input(forward(k3s2_pair, bf16, nhwc, kRelu, nhwc)),
      // An activation other than relu in the one fused epilogue (ACT = kiln::Act::hardswish).
      forward(k3, f32, nchw, kBias | kHardswish),
      forward(k3, f16, nhwc, kBias | kRes | kHardswish),
      forward(k5s2g2, bf16, nhwc, kHardswish),
      // The other activations, parameters included, in direct, depthwise and implicit GEMM.
      with(forward(k3, f32, nchw, kBias), Activation::clip(0, 6)),
      with(forward(k3, f16, nhwc, kBias | kRes), Activation::gelu),
      with(forward(dw_d2, f32, nchw, kBias), Activation::silu),
      with(forward(k1, f32, nhwc, kNone), Activation::hardsigmoid(0.2f, 0.5f)),
      with(forward(k3s3, f32, nchw, kRes), Activation::sigmoid),
      with(forward(k5s2g2, bf16, nhwc, kBias), Activation::gelu_tanh),
      // Depthwise: both layouts, the three types, an NCHW input into NHWC, every epilogue part.
      with(forward(dw3, f32, nhwc, kBias), Activation::clip(0, 6)),
      forward(dw3, f16, nchw, kBias | kRes | kRelu),
      with(forward(dw5s2, bf16, nhwc, kBias), Activation::silu),
      forward(dw5s2, f32, nchw, kHardswish),
      nchw_input(forward(dw3s2_small, f16, nhwc, kBias | kRelu)),
      forward(dw3s2_small, f32, nhwc, kRes),
  };
}

// Weight gradients on tensor cores: channels in whole 16-byte runs and tiles of 32 or 64,
// an output-channel tile left partial (24 of 64), stride 2 with padding, a 1x1.
const Conv wg3{2, 32, 7, 9, 24, {3, 3}, {1, 1}, {1, 1}};
const Conv wg3s2{1, 64, 9, 7, 16, {3, 3}, {2, 2}, {1, 1}};
const Conv wg1{3, 64, 5, 6, 72, {1, 1}};

// ConvN's pools (3 stride 2, 3 stride 1 after 3x3 convs), 2 stride 2, padding, ceil_mode
// (a last window past the image), strided and grouped convs, odd sizes, wide channels.
const Conv convn{2, 3, 22, 13, 32, {3, 3}, {1, 1}, {1, 1}};
const Conv convn_wide{1, 45, 9, 11, 45, {3, 3}, {1, 1}, {1, 1}};
const Pool p3s2{{3, 3}, {2, 2}}, p3s1{{3, 3}, {1, 1}}, p2s2{{2, 2}, {2, 2}};
const Pool p3s2p1{{3, 3}, {2, 2}, {1, 1}}, p3s2ceil{{3, 3}, {2, 2}, {0, 0}, true};

std::vector<StepSpec> pooled_specs() {
  return {
      pooled(convn, p3s2, f32, nchw, kBias | kRelu),
      pooled(convn, p3s1, f16, nhwc, kBias | kRelu),
      pooled(convn_wide, p3s1, f32, nhwc, kBias | kRelu),
      pooled(convn_wide, p3s2ceil, bf16, nchw, kRelu),
      pooled(k3, p2s2, f32, nhwc, kNone),
      pooled(k5s2g2, p3s2p1, f16, nchw, kBias),
      pooled(k3s2_pair, p3s2ceil, f32, nchw, kBias | kRelu),
      nchw_input(pooled(k7s2, p3s2p1, f32, nhwc, kBias | kRelu)),
      pooled(convn, p3s2, f16, nhwc, kBias | kHardswish),
      with(pooled(convn, p3s2, f32, nchw, kBias), Activation::clip(-1, 1)),
  };
}

std::vector<StepSpec> backward_specs() {
  return {
      backward_data(k3, f32, false),
      backward_data(k5s2g2, f32, true),
      backward_data(dw_d2, f16, false),
      backward_data(k7s2, bf16, true),
      backward_data(k3x1g4, f32, false),
      backward_data(k1x5s, f32, true),
      backward_data(k3s3, f16, true),
      backward_data(dw_mult, bf16, false),
      backward_data(k3d2_wide, f32, false),
      backward_data(k1s2, f32, true),
      backward_data(k3s2_pair, f32, false),
      backward_data(s2d2, f32, true),
      backward_data(s3d2, bf16, false),
      backward_weight(s3d2, f32, false),
      backward_weight(k5s2g2, f32, true),
      backward_weight(dw_d2, bf16, false),
      backward_weight(k7s2, f16, true),
      backward_weight(k3x1g4, f32, false),
      backward_weight(k1x5s, bf16, true),
      backward_weight(k3s3, f32, false),
      backward_weight(dw_mult, f16, true),
      backward_weight(k3_deep, f32, false),
      backward_weight(k1s2, f32, true),
      backward_weight(k3s2_pair, f32, false),
      bias_backward({2, 8, 7, 9}, f32, false),
      bias_backward({3, 5, 13, 11}, f16, true),
      bias_backward({5, 37}, f32, true),
      bias_backward({7, 10}, bf16, false),
      bias_backward({1, 6, 1, 1}, f32, false),
      transposed(k5s2g2, f32, true, {1, 1}),
      transposed(s3d2, f16, true, {2, 1}),
      transposed(k3, bf16, false),
      transposed(dw_mult, f32, true),
      transposed(k1s2, f32, true, {1, 0}),
      nhwc_io(transposed(k5s2g2, f16, true, {1, 1})),
      nhwc_io(transposed(s3d2, f32, true, {2, 1})),
      nhwc_io(transposed(dw_mult, bf16, false)),
      nhwc_io(transposed(k1s2, f32, true, {1, 0})),
      nhwc_grads(backward_data(k3, f16, true)),
      nhwc_grads(backward_data(k3s2_pair, f32, false)),
      nhwc_grads(backward_data(k5s2g2, bf16, true)),
      nhwc_grads(backward_weight(k3, f16, false)),
      nhwc_grads(backward_weight(k5s2g2, f32, true)),
      nhwc_grads(backward_weight(k3s3, bf16, false)),
      nhwc_grads(backward_weight(wg3, f16, false)),
      nhwc_grads(backward_weight(wg3s2, bf16, false)),
      sliced(nhwc_grads(backward_weight(wg3, f16, false)), 3),
      sliced(nhwc_grads(backward_weight(wg1, bf16, false)), 4),
      sliced(nhwc_grads(backward_weight(wg3s2, f16, false)), 2),
      nhwc_grads(backward_weight(stem, f16, false)),
      sliced(nhwc_grads(backward_weight(stem, bf16, false)), 3),
      nhwc_grads(backward_weight(c12, bf16, false)),
      // The CUDA-core kernel's slices: NCHW, groups, f32, the stem's 7x7 stride 2 (C = 3).
      sliced(backward_weight(k5s2g2, f32, false), 3),
      sliced(backward_weight(k7s2, f16, false), 4),
      sliced(nhwc_grads(backward_weight(k3s3, bf16, false)), 2),
      flip_weight(k3, f32, nchw),
      flip_weight(k3, f16, nhwc),
      flip_weight(k1x5s, bf16, nhwc),
      // Phases of a 5x5 stride-2 conv: 2x3 taps from (1, 0), 3x2 from (0, 1).
      flip_weight(k5s2, f16, nhwc, {2, 3}, {1, 0}),
      flip_weight(k5s2, f32, nchw, {3, 2}, {0, 1}),
  };
}

std::vector<StepSpec> fold_specs() {
  return {
      fold_bn(k3, f32, nchw, true, 1e-5),     fold_bn(k7s2, f32, nhwc, false, 1e-5),
      fold_bn(k3x1g4, f16, nhwc, true, 1e-3), fold_bn(dw_d2, bf16, nchw, false, 1e-5),
      fold_bn(k1, f32, nhwc, true, 0.1),
  };
}

// For NVRTC: every compile-time branch of every template (dtypes, layouts, epilogues,
// accumulate, strides, dilation, groups, the largest kernel) with every tile
// configuration, on fewer shapes than the emulator sees (compilation is the slow part).
std::vector<StepSpec> nvrtc_specs() {
  return {
      forward(k3, f32, nchw, kBias | kRelu),
      nchw_input(forward(k7s2, f16, nhwc, kBias | kRelu)),
      forward(k5s2g2, f16, nhwc, kBias | kRes | kRelu),
      forward(dw_d2, bf16, nchw, kRes),
      with(forward(dw5s2, f16, nhwc, kBias | kRes), Activation::hardswish),
      nchw_input(forward(dw3, bf16, nhwc, kBias)),
      forward(dw3, f32, nchw, kRelu),
      forward(k7s2, bf16, nhwc, kNone),
      forward(k3_deep, f32, nhwc, kBias | kRes, nhwc),
      forward(k3d2_wide, f16, nchw, kRelu),
      backward_data(k5s2g2, f32, true),
      backward_data(s3d2, bf16, false),
      backward_data(dw_mult, f16, true),
      transposed(k5s2g2, f16, true, {1, 1}),
      transposed(s3d2, f32, false),
      nhwc_io(transposed(k5s2g2, f16, true, {1, 1})),
      backward_weight(k7s2, f32, false),
      backward_weight(k3d2_wide, f16, true),
      backward_weight(dw_d2, bf16, false),
      sliced(backward_weight(k7s2, bf16, false), 3),
      sliced(nhwc_grads(backward_weight(k5s2g2, f32, false)), 2),
      sliced(nhwc_grads(backward_weight(stem, f16, false)), 4),
      bias_backward({2, 8, 7, 9}, f16, true),
      bias_backward({5, 37}, bf16, false),
      fold_bn(k3, f32, nhwc, true, 1e-5),
      fold_bn(k3x1g4, bf16, nchw, false, 1e-3),
      fold_bn(k1, f16, nhwc, false, 1e-5),
      pooled(convn, p3s2, f32, nchw, kBias | kRelu),
      pooled(convn_wide, p3s1, f16, nhwc, kBias | kRelu),
      pooled(k5s2g2, p3s2p1, bf16, nchw, kBias),
      nchw_input(pooled(k7s2, p3s2ceil, f32, nhwc, kRelu)),
  };
}

std::vector<StepSpec> all_specs() {
  std::vector<StepSpec> s = forward_specs();
  for (auto* more : {&backward_specs, &fold_specs, &pooled_specs})
    for (StepSpec& x : (*more)())
      s.push_back(x);
  return s;
}

// Only this group's variants (other groups test theirs).
std::vector<Built> ours(std::vector<Built> built) {
  std::erase_if(built, [](const Built& b) { return !kFamilies.count(b.variant.family); });
  return built;
}

// The fused epilogue's activation as an instance spells an activation other than none and
// relu (ACT = kiln::Act::<name>, generator/select/epilogue.cpp), here for relu and none
// themselves: the template must read ACT as it reads RELU. Forward convs of the direct and
// implicit-GEMM families, with and without relu; the variants renamed "..._act".
std::vector<Built> spelled_act() {
  const Conv cv{2, 8, 9, 9, 16, {3, 3}, {1, 1}, {1, 1}};
  std::vector<Built> out;
  for (const Built& b : all_variants({forward(cv, f32, nchw, kBias | kRes | kRelu),
                                      forward(cv, f16, nhwc, kBias | kRes | kRelu, nhwc),
                                      forward(cv, f16, nhwc, kBias, nhwc)},
                                     {"h200"})) {
    if (b.variant.family != "conv2d_direct" && b.variant.family != "conv2d_implicit_gemm") continue;
    Built a = b;
    int spelled = 0;
    for (CfgEntry& e : a.variant.cfg)
      if (e.name == "RELU") {
        e = {"ACT", CfgEnum{"kiln::Act", std::get<bool>(e.value) ? "relu" : "none"}}, ++spelled;
      }
    REQUIRE(spelled == 1);
    a.variant.name += "_act";
    out.push_back(std::move(a));
  }
  return out;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

} // namespace

TEST_CASE("conv group variants compile with NVRTC for sm_75, sm_80 and sm_90") {
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::string> unserved;
  const auto specs = nvrtc_specs();
  const auto built = ours(all_variants(specs, {"t4", "a100", "h200"}, &unserved));
  for (const std::string& u : unserved)
    FAIL_CHECK("no variant for " << u);
  // Every spec gets a variant of its family on every GPU.
  std::set<std::string> served;
  for (const Built& b : built)
    served.insert(b.spec.label + " on " + b.gpu);
  CHECK(served.size() == specs.size() * 3);
  const auto failures = nvrtc_failures(built);
  for (const std::string& f : failures)
    FAIL_CHECK(f);
  MESSAGE(built.size() << " variants compiled in " << seconds_since(t0) << " s");
}

TEST_CASE("conv group variants match the reference on the emulator") {
  const auto t0 = std::chrono::steady_clock::now();
  const auto built = ours(all_variants(all_specs(), {"h200"}));
  std::set<std::string> specs;
  for (const Built& b : built)
    specs.insert(b.spec.label);
  CHECK(specs.size() == all_specs().size());
  // The tensor-core weight gradient serves C = 3 and 12 (GATHER), whole and sliced.
  int gathers = 0;
  for (const Built& b : built)
    gathers += b.variant.name.find("_gather") != std::string::npos;
  CHECK(gathers >= 6);
  for (const KernelCheck& r : emu_checks(built, temp_dir("kiln-conv"))) {
    INFO(r.node << ": " << r.kernel << " rel " << r.rel << " " << r.error);
    CHECK(r.pass);
  }
  MESSAGE(built.size() << " variant runs in " << seconds_since(t0) << " s");
}

TEST_CASE("an activation spelled ACT = kiln::Act compiles with NVRTC as RELU does") {
  const auto built = spelled_act();
  std::set<std::string> families;
  for (const Built& b : built) {
    families.insert(b.variant.family);
    const std::string src = instance_source(b.variant, {});
    const bool relu = b.spec.label.find("relu") != std::string::npos;
    CHECK(src.find(relu
                       ? "static constexpr kiln::Act ACT = kiln::Act::relu;"
                       : "static constexpr kiln::Act ACT = kiln::Act::none;") != std::string::npos);
    CHECK(src.find("RELU") == std::string::npos);
    CHECK(instance_params(b.variant)["ACT"] == (relu ? "relu" : "none"));
  }
  CHECK(families.size() == 2);
  for (const std::string& f : nvrtc_failures(built))
    FAIL_CHECK(f);
}

TEST_CASE("an activation spelled ACT = kiln::Act matches the reference on the emulator") {
  const auto built = spelled_act();
  REQUIRE(!built.empty());
  for (const KernelCheck& r : emu_checks(built, temp_dir("kiln-act"))) {
    INFO(r.node << ": " << r.kernel << " rel " << r.rel << " " << r.error);
    CHECK(r.pass);
  }
}
