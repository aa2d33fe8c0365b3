// conv2d: the op and its functions (forward, fold_bn, backward_data, flip_weight, backward_weight,
// the sparse forward and weight gradient, the split-K forward, the forward with a fused pool).
#include "runtime/cpu/step_args.hpp"
#include "runtime/error.hpp"
#include "runtime/ops/registry.hpp"
#include "runtime/ops/roles.hpp"
#include "runtime/ops/shape_rules.hpp"
#include "runtime/ops/split_k.hpp"
#include "runtime/ops/weighted.hpp"
#include "runtime/sparse_form.hpp"

#include <algorithm>
#include <cmath>

namespace kiln {

namespace {

using namespace shape_rules;
using cpu::CView, cpu::StepArgs, cpu::View;
using sv = std::string_view;

constexpr AttrSpec attrs[] = {
    {"out_channels", AttrType::integer, true}, {"kernel", AttrType::int2, true},
    {"stride", AttrType::int2, false},         {"padding", AttrType::int2, false},
    {"padding_end", AttrType::int2, false},    {"dilation", AttrType::int2, false},
    {"groups", AttrType::integer, false},      {"bias", AttrType::boolean, false}};

Shape shape(const Attrs& a, std::span<const Shape> in) {
  const Shape& x = in[0];
  need_rank(x, 4, "[N, C, H, W]");
  check_positive(a.out_channels, "out_channels");
  check_positive(a.kernel, "kernel");
  check_positive(a.stride, "stride");
  check_positive(a.dilation, "dilation");
  check_padding(a);
  check_positive(a.groups, "groups");
  if (x[1] % a.groups != 0)
    throw Error(cat("input channels ", x[1], " are not divisible by groups ", a.groups));
  if (a.out_channels % a.groups != 0)
    throw Error(cat("out_channels ", a.out_channels, " is not divisible by groups ", a.groups));
  Shape y = window_shape(x, a.out_channels, a, a.kernel, a.dilation, false, "conv2d");
  mul(mul(y[0], y[1]), mul(y[2], y[3]));
  return y;
}

std::vector<ParamSpec> params(const Attrs& a, std::span<const Shape> in) {
  std::vector<ParamSpec> p{
      {"weight", {a.out_channels, in[0][1] / a.groups, a.kernel[0], a.kernel[1]}, true}};
  if (a.bias) p.push_back({"bias", {a.out_channels}, true});
  return p;
}

int64_t macs(const Attrs& a, std::span<const Shape> in, const Shape& out) {
  return numel(out) * (in[0][1] / a.groups) * a.kernel[0] * a.kernel[1];
}

int64_t thop_flops(const Attrs& a, std::span<const Shape> in, const Shape& y) {
  return 2 * numel(y) * (in[0][1] / a.groups * a.kernel[0] * a.kernel[1] + (a.bias ? 1 : 0));
}

constexpr OpDef op_defs[] = {{.kind = OpKind::conv2d,
                              .name = "conv2d",
                              .attrs = attrs,
                              .shape = shape,
                              .params = params,
                              .macs = macs,
                              .thop_flops = thop_flops,
                              .width = &Attrs::out_channels}};

// conv2d.forward: x, w, [b], [residual], [nnz: guard], [xmap0.., wmap: the TMA tensor maps a
// Hopper kernel reads, runtime/ops/tensor_map.cpp; the reference ignores them], [gate: a
// squeeze-excite gate [N, C, 1, 1] x is read scaled by, generator/rewrite/gates.cpp] -> y
// (the epilogue), [compacted y].
constexpr sv fwd_in[] = {"x",     "w",     "b",     "residual", "nnz",   "xmap0", "xmap1", "xmap2",
                         "xmap3", "xmap4", "xmap5", "xmap6",    "xmap7", "xmap8", "wmap",  "gate"};
constexpr sv fwd_optional[] = {"b", "residual", "nnz", "y_values", "y_index", "y_count", "y_nnz"};
constexpr sv fwd_map_optional[] = {"b",     "residual", "nnz",   "y_values", "y_index", "y_count",
                                   "y_nnz", "xmap0",    "xmap1", "xmap2",    "xmap3",   "xmap4",
                                   "xmap5", "xmap6",    "xmap7", "xmap8",    "wmap",    "gate"};
constexpr RoleType fwd_types[] = {
    {"xmap0", ArgType::u8}, {"xmap1", ArgType::u8}, {"xmap2", ArgType::u8}, {"xmap3", ArgType::u8},
    {"xmap4", ArgType::u8}, {"xmap5", ArgType::u8}, {"xmap6", ArgType::u8}, {"xmap7", ArgType::u8},
    {"xmap8", ArgType::u8}, {"wmap", ArgType::u8}};

template <class T> void forward(const StepArgs<T>& c) {
  std::vector<T> gated;
  cpu::conv2d<T>(c.s.attrs, cpu::gated_x(c, gated), c.in("w"), c.opt("b"), c.out("y"));
  cpu::epilogue(c);
}

// conv2d.fold_bn: w, [b], weight, bias, running_mean, running_var -> w_out, b_out: an
// inference batchnorm folded into the convolution before it. With s = gamma / sqrt(var +
// eps), w_out = w * s per output channel and b_out = (b - mean) * s + beta.
constexpr sv fold_in[] = {"w", "b", "weight", "bias", "running_mean", "running_var"};
constexpr sv fold_out[] = {"w_out", "b_out"};

void check_fold_bn(const StepCheck& c) {
  const Shape& w = c.shape("w");
  c.same("w", "w_out");
  for (auto r : {"weight", "bias", "running_mean", "running_var", "b_out"})
    c.expect(r, {w[0]});
  if (c.has("b")) c.expect("b", {w[0]});
  const double eps = c.s.fold_bn().eps;
  if (!(eps > 0 && eps <= 1)) c.fail(cat("eps must be in (0, 1], got ", eps));
}

template <class T> void fold_bn(const StepArgs<T>& c) {
  CView<T> w = c.in("w");
  View<T> wo = c.out("w_out");
  const T* b = c.opt("b");
  const T *gamma = c.in("weight").data, *beta = c.in("bias").data;
  const T *mean = c.in("running_mean").data, *var = c.in("running_var").data;
  T* bo = c.out("b_out").data;
  const double eps = c.s.fold_bn().eps;
  const int64_t o = w.shape[0], per = numel(w.shape) / o;
  for (int64_t k = 0; k < o; ++k) {
    const double s = double(gamma[k]) / std::sqrt(double(var[k]) + eps);
    for (int64_t i = 0; i < per; ++i)
      wo.data[k * per + i] = T(double(w.data[k * per + i]) * s);
    bo[k] = T(((b ? double(b[k]) : 0.0) - double(mean[k])) * s + double(beta[k]));
  }
}

template <class T> void backward_data(const StepArgs<T>& c) {
  cpu::conv2d_backward_data<T>(c.s.attrs, c.in("dy"), c.in("w"), c.out("dx"), c.s.accumulate);
}

// conv2d.flip_weight: w [O, C, KH, KW] -> w_out [C, O, TH, TW] with w_out[c][o][i][j] =
// w[o][c][FH + (TH-1-i) * SH][FW + (TW-1-j) * SW] (one group; FlipTaps: first F, step S;
// by default every tap, T = K): the filters of the forward conv that computes a stride-1
// conv's data gradient from dy, or one phase of a strided conv's.
constexpr sv flip_in[] = {"w"}, flip_out[] = {"w_out"};

void check_flip_weight(const StepCheck& c) {
  const Shape& w = c.shape("w");
  const Shape& wo = c.shape("w_out");
  const FlipTaps& t = c.s.flip_taps();
  if (w.size() != 4) c.fail(cat("w is ", shape_str(w), ", not [O, C, KH, KW]"));
  if (wo.size() != 4 || wo[0] != w[1] || wo[1] != w[0])
    c.fail(cat("w_out is ", shape_str(wo), ", not [", w[1], ", ", w[0], ", TH, TW]"));
  for (int i = 0; i < 2; ++i)
    if (wo[2 + i] < 1 || t.first[i] < 0 || t.step[i] < 1 ||
        t.first[i] + (wo[2 + i] - 1) * t.step[i] >= w[2 + i])
      c.fail(cat("taps from ", t.first[i], " by ", t.step[i], ", ", wo[2 + i],
                 " of them, do not fit w's ", w[2 + i], " along axis ", 2 + i));
  c.not_accumulated();
}

template <class T> void flip_weight(const StepArgs<T>& c) {
  CView<T> w = c.in("w");
  View<T> wo = c.out("w_out");
  const FlipTaps& t = c.s.flip_taps();
  const int64_t O = w.shape[0], C = w.shape[1], KH = w.shape[2], KW = w.shape[3];
  const int64_t TH = wo.shape[2], TW = wo.shape[3];
  for (int64_t o = 0; o < O; ++o)
    for (int64_t ch = 0; ch < C; ++ch)
      for (int64_t i = 0; i < TH; ++i)
        for (int64_t j = 0; j < TW; ++j) {
          const int64_t kh = t.first[0] + (TH - 1 - i) * t.step[0];
          const int64_t kw = t.first[1] + (TW - 1 - j) * t.step[1];
          wo.data[((ch * O + o) * TH + i) * TW + j] = w.data[((o * C + ch) * KH + kh) * KW + kw];
        }
}

// conv2d.backward_weight: x, dy, [nnz: guard], [xmap0.., dymap: the tensor maps a Hopper
// kernel reads; the reference ignores them] -> dw, or partial (below).
constexpr sv bw_in[] = {"x",     "dy",    "nnz",   "xmap0", "xmap1", "xmap2", "xmap3",
                        "xmap4", "xmap5", "xmap6", "xmap7", "xmap8", "dymap"};
constexpr sv bw_out[] = {"dw", "partial"};
constexpr sv bw_optional[] = {"nnz",   "dw",    "partial", "xmap0", "xmap1", "xmap2", "xmap3",
                              "xmap4", "xmap5", "xmap6",   "xmap7", "xmap8", "dymap"};
constexpr RoleType bw_types[] = {
    {"xmap0", ArgType::u8}, {"xmap1", ArgType::u8}, {"xmap2", ArgType::u8}, {"xmap3", ArgType::u8},
    {"xmap4", ArgType::u8}, {"xmap5", ArgType::u8}, {"xmap6", ArgType::u8}, {"xmap7", ArgType::u8},
    {"xmap8", ArgType::u8}, {"dymap", ArgType::u8}};

// Or -> partial [S, *dw]: slice s the sum over the output positions r = (n * OH + oh) * OW + ow
// in [s * R / S, (s + 1) * R / S) (R = N * OH * OW), which partial.sum then adds up: the
// tensor-core kernel's split of its reduction over blocks.
void check_conv_backward_weight(const StepCheck& c) {
  c.expect("dy", c.forward(c.shape("x")));
  const Shape w = c.param(c.shape("x"), "weight").shape;
  if (c.has("dw") == c.has("partial"))
    c.fail("writes either dw or partial (the sums over ranges of positions), not both");
  if (c.has("dw")) return c.expect("dw", w);
  const Shape& p = c.shape("partial");
  const Shape& dy = c.shape("dy");
  const int64_t positions = dy[0] * dy[2] * dy[3];
  if (p.size() != 5 || Shape(p.begin() + 1, p.end()) != w || p[0] < 1 || p[0] > positions)
    c.fail(cat("\"partial\" ", shape_str(p), " is not [S, ", shape_str(w).substr(1),
               " with 1 <= S <= N*OH*OW = ", positions));
  c.not_accumulated();
}

template <class T> void backward_weight(const StepArgs<T>& c) {
  if (c.s.arg("dw") >= 0)
    return cpu::conv2d_backward_weight<T>(c.s.attrs, c.in("x"), c.in("dy"), c.out("dw"),
                                          c.s.accumulate);
  CView<T> dy = c.in("dy");
  View<T> part = c.out("partial");
  const int64_t S = part.shape[0], N = dy.shape[0], O = dy.shape[1];
  const int64_t plane = dy.shape[2] * dy.shape[3], R = N * plane;
  const Shape w(part.shape.begin() + 1, part.shape.end());
  std::vector<T> masked(size_t(numel(dy.shape)));
  for (int64_t r = 0; r < S; ++r) {
    std::fill(masked.begin(), masked.end(), T(0));
    for (int64_t pos = r * R / S; pos < (r + 1) * R / S; ++pos)
      for (int64_t o = 0; o < O; ++o) {
        const int64_t at = (pos / plane * O + o) * plane + pos % plane;
        masked[size_t(at)] = dy.data[at];
      }
    cpu::conv2d_backward_weight<T>(c.s.attrs, c.in("x"), CView<T>{masked.data(), dy.shape},
                                   View<T>{part.data + r * numel(w), w}, false);
  }
}

// x as the sparse functions' reference reads it: decompacted from values, index and count.
template <class T> std::vector<T> decompacted(const StepArgs<T>& c) {
  const Shape& x = c.shape("x");
  std::vector<T> dense(size_t(numel(x)));
  cpu::decompact<T>(c.in("values").data, c.template raw<uint8_t>("index"),
                    c.template raw<uint8_t>("count"), c.shape("values")[2],
                    View<T>{dense.data(), x});
  return dense;
}

// conv2d.forward_sparse: x (its shape; its elements are not read), values, index, count, w,
// [b], [residual], [nnz: guard] -> y, [compacted y]: conv2d.forward from the compacted x.
constexpr sv sparse_in[] = {"x", "values", "index", "count", "w", "b", "residual", "nnz"};

template <class T> void forward_sparse(const StepArgs<T>& c) {
  const std::vector<T> x = decompacted(c);
  cpu::conv2d<T>(c.s.attrs, CView<T>{x.data(), c.shape("x")}, c.in("w"), c.opt("b"), c.out("y"));
  cpu::epilogue(c);
}

// conv2d.backward_weight_sparse: x (shape), values, index, count, dy, [nnz: guard] -> dw:
// conv2d.backward_weight from the compacted x. Or -> partial [S, *dw]: the sums over S
// contiguous ranges of the input's rows (row r = n * H + h; range s = [s * N*H / S, (s + 1) *
// N*H / S)), which partial.sum then adds up, so the reduction over the input spreads over S
// times more blocks.
constexpr sv sparse_bw_in[] = {"x", "values", "index", "count", "dy", "nnz"};
constexpr sv dw_or_partial[] = {"dw", "partial"}, sparse_bw_optional[] = {"nnz", "dw", "partial"};

void check_backward_weight_sparse(const StepCheck& c) {
  c.expect("dy", c.forward(c.shape("x")));
  const Shape w = c.param(c.shape("x"), "weight").shape;
  if (c.has("dw") == c.has("partial"))
    c.fail("writes either dw or partial (the sums over ranges of rows), not both");
  if (c.has("dw")) return c.expect("dw", w);
  const Shape& p = c.shape("partial");
  const Shape& x = c.shape("x");
  if (p.size() != 5 || Shape(p.begin() + 1, p.end()) != w || p[0] < 1 || p[0] > x[0] * x[2])
    c.fail(cat("\"partial\" ", shape_str(p), " is not [S, ", shape_str(w).substr(1),
               " with 1 <= S <= N*H = ", x[0] * x[2]));
  c.not_accumulated();
}

template <class T> void backward_weight_sparse(const StepArgs<T>& c) {
  const Shape& xs = c.shape("x");
  const std::vector<T> x = decompacted(c);
  if (c.s.arg("dw") >= 0)
    return cpu::conv2d_backward_weight<T>(c.s.attrs, CView<T>{x.data(), xs}, c.in("dy"),
                                          c.out("dw"), c.s.accumulate);
  // Partial sums: range r of the input's rows (n * H + h) contributes partial[r] alone.
  View<T> part = c.out("partial");
  const int64_t S = part.shape[0], R = xs[0] * xs[2], C = xs[1], H = xs[2], W = xs[3];
  const Shape w(part.shape.begin() + 1, part.shape.end());
  std::vector<T> xr(x.size());
  for (int64_t r = 0; r < S; ++r) {
    std::fill(xr.begin(), xr.end(), T(0));
    for (int64_t row = r * R / S; row < (r + 1) * R / S; ++row)
      for (int64_t ch = 0; ch < C; ++ch) {
        const int64_t at = ((row / H * C + ch) * H + row % H) * W;
        std::copy_n(x.begin() + at, W, xr.begin() + at);
      }
    cpu::conv2d_backward_weight<T>(c.s.attrs, CView<T>{xr.data(), xs}, c.in("dy"),
                                   View<T>{part.data + r * numel(w), w}, false);
  }
}

void check_forward_partial(const StepCheck& c) { check_split_k(c, true); }
template <class T> void forward_partial(const StepArgs<T>& c) { split_k_reference(c, true); }

// conv2d.forward_split: conv2d.forward with split-K completed inside its kernel; the partial
// slices and the tile tickets are its workspace (split_k.hpp), which the reference leaves;
// [xmap0.., wmap]: a Hopper kernel's tensor maps, as conv2d.forward's.
constexpr sv split_in[] = {"x",     "w",     "b",     "residual", "tickets", "xmap0",
                           "xmap1", "xmap2", "xmap3", "xmap4",    "xmap5",   "xmap6",
                           "xmap7", "xmap8", "wmap",  "gate"};
constexpr sv split_out[] = {"y", "partial"};
constexpr sv split_optional[] = {"b",     "residual", "xmap0", "xmap1", "xmap2", "xmap3", "xmap4",
                                 "xmap5", "xmap6",    "xmap7", "xmap8", "wmap",  "gate"};
// conv2d.forward_partial: x, w, [gate] -> partial (split-K's raw sums, split_k.hpp).
constexpr sv partial_in[] = {"x", "w", "gate"}, partial_optional[] = {"gate"};
constexpr RoleType split_types[] = {
    {"tickets", ArgType::i32}, {"xmap0", ArgType::u8}, {"xmap1", ArgType::u8},
    {"xmap2", ArgType::u8},    {"xmap3", ArgType::u8}, {"xmap4", ArgType::u8},
    {"xmap5", ArgType::u8},    {"xmap6", ArgType::u8}, {"xmap7", ArgType::u8},
    {"xmap8", ArgType::u8},    {"wmap", ArgType::u8}};
void check_forward_split(const StepCheck& c) { check_split_in_kernel(c, true); }

// conv2d.pool_forward: x, w, [b] -> y = maxpool(activation(conv(x, w) + b)), the pool's
// window in FusedPool: a conv whose output only a max pool reads, fused
// (generator/rewrite/conv_pool.cpp) so that output never reaches memory.
void check_pool_forward(const StepCheck& c) {
  if (c.s.op != OpKind::conv2d) c.fail("pools a conv2d's output");
  const Shape y = c.forward(c.shape("x"));
  c.expect("w", c.param(c.shape("x"), "weight").shape);
  if (c.has("b")) c.expect("b", {y[1]});
  c.expect("y", c.forward_as(OpKind::maxpool2d, c.s.fused_pool().pool, y, "its pool"));
}

template <class T> void pool_forward(const StepArgs<T>& c) {
  // The conv and its epilogue into a temporary, then the pool.
  CView<T> x = c.in("x");
  const Shape ys = infer_shape(OpKind::conv2d, c.s.attrs, std::span<const Shape>(&x.shape, 1));
  std::vector<T> y(size_t(numel(ys)));
  cpu::conv2d<T>(c.s.attrs, x, c.in("w"), c.opt("b"), View<T>{y.data(), ys});
  cpu::apply_activation(c.s.epilogue.activation, View<T>{y.data(), ys});
  cpu::maxpool2d<T>(c.s.fused_pool().pool, CView<T>{y.data(), ys}, c.out("y"));
}

constexpr FnDef fn_defs[] = {
    {.fn = Fn::conv2d_forward,
     .name = "conv2d.forward",
     .signature = {fwd_in, roles::y_compacted, fwd_map_optional, roles::y_nnz},
     .epilogue = true,
     .guardable = true,
     .types = fwd_types,
     .check = check_weighted_forward,
     .cpu_f32 = forward<float>,
     .cpu_f64 = forward<double>,
     .per_image = roles::x_y_residual_gate,
     .shared = roles::weights_and_maps},
    {.fn = Fn::conv2d_fold_bn,
     .name = "conv2d.fold_bn",
     .signature = {fold_in, fold_out, roles::b},
     .params = params_index<FoldBn>(),
     .check = check_fold_bn,
     .cpu_f32 = fold_bn<float>,
     .cpu_f64 = fold_bn<double>},
    {.fn = Fn::conv2d_backward_data,
     .name = "conv2d.backward_data",
     .signature = {roles::dy_w, roles::dx, {}},
     .check = check_backward_data,
     .cpu_f32 = backward_data<float>,
     .cpu_f64 = backward_data<double>,
     .per_image = roles::dy_dx,
     .shared = roles::weights_and_maps},
    {.fn = Fn::conv2d_flip_weight,
     .name = "conv2d.flip_weight",
     .signature = {flip_in, flip_out, {}},
     .params = params_index<FlipTaps>(),
     .params_optional = true,
     .check = check_flip_weight,
     .cpu_f32 = flip_weight<float>,
     .cpu_f64 = flip_weight<double>},
    {.fn = Fn::conv2d_backward_weight,
     .name = "conv2d.backward_weight",
     .signature = {bw_in, bw_out, bw_optional},
     .guardable = true,
     .types = bw_types,
     .check = check_conv_backward_weight,
     .cpu_f32 = backward_weight<float>,
     .cpu_f64 = backward_weight<double>},
    {.fn = Fn::conv2d_forward_sparse,
     .name = "conv2d.forward_sparse",
     .signature = {sparse_in, roles::y_compacted, fwd_optional, roles::y_nnz},
     .epilogue = true,
     .guardable = true,
     .check = check_weighted_forward,
     .cpu_f32 = forward_sparse<float>,
     .cpu_f64 = forward_sparse<double>},
    {.fn = Fn::conv2d_backward_weight_sparse,
     .name = "conv2d.backward_weight_sparse",
     .signature = {sparse_bw_in, dw_or_partial, sparse_bw_optional},
     .guardable = true,
     .check = check_backward_weight_sparse,
     .cpu_f32 = backward_weight_sparse<float>,
     .cpu_f64 = backward_weight_sparse<double>},
    {.fn = Fn::conv2d_forward_partial,
     .name = "conv2d.forward_partial",
     .signature = {partial_in, roles::partial, partial_optional},
     .check = check_forward_partial,
     .cpu_f32 = forward_partial<float>,
     .cpu_f64 = forward_partial<double>},
    {.fn = Fn::conv2d_forward_split,
     .name = "conv2d.forward_split",
     .signature = {split_in, split_out, split_optional},
     .epilogue = true,
     .types = split_types,
     .check = check_forward_split,
     .cpu_f32 = forward<float>,
     .cpu_f64 = forward<double>},
    {.fn = Fn::conv2d_pool_forward,
     .name = "conv2d.pool_forward",
     .signature = {roles::x_w_b, roles::y, roles::b},
     .params = params_index<FusedPool>(),
     .epilogue = true,
     .check = check_pool_forward,
     .cpu_f32 = pool_forward<float>,
     .cpu_f64 = pool_forward<double>,
     .per_image = roles::x_y,
     .shared = roles::weights_and_maps},
};

} // namespace

namespace ops {
OpFile conv2d_file() { return {op_defs, fn_defs}; }
} // namespace ops

} // namespace kiln
