// batchnorm: the op and its functions (the inference forward, the training forward with
// batch statistics, the backward).
#include "runtime/cpu/step_args.hpp"
#include "runtime/error.hpp"
#include "runtime/ops/batchnorm_chunks.hpp"
#include "runtime/ops/registry.hpp"
#include "runtime/ops/roles.hpp"
#include "runtime/ops/step_check.hpp"

namespace kiln {

namespace {

using cpu::CView, cpu::StepArgs, cpu::View;
using sv = std::string_view;

constexpr AttrSpec attrs[] = {{"eps", AttrType::number, false}};

Shape shape(const Attrs& a, std::span<const Shape> in) {
  const Shape& x = in[0];
  if (x.size() != 4 && x.size() != 2)
    throw Error(cat("batchnorm expects [N, C, H, W] or [N, C], got ", shape_str(x)));
  if (!(a.eps > 0) || a.eps > 1) throw Error("", "eps", cat("must be in (0, 1], got ", a.eps));
  return x;
}

std::vector<ParamSpec> params(const Attrs&, std::span<const Shape> in) {
  const int64_t c = in[0][1];
  return {{"weight", {c}, true},
          {"bias", {c}, true},
          {"running_mean", {c}, false},
          {"running_var", {c}, false}};
}

int64_t thop_flops(const Attrs&, std::span<const Shape> in, const Shape&) {
  return 2 * 2 * numel(in[0]);
}

constexpr OpDef op_defs[] = {{.kind = OpKind::batchnorm,
                              .name = "batchnorm",
                              .attrs = attrs,
                              .shape = shape,
                              .params = params,
                              .thop_flops = thop_flops}};

// batchnorm.forward: x, weight, bias, running_mean, running_var -> y (inference; the
// epilogue), [compacted y].
constexpr sv fwd_in[] = {"x", "weight", "bias", "running_mean", "running_var"};

void check_forward(const StepCheck& c) {
  c.expect("y", c.forward(c.shape("x")));
  for (auto r : {"weight", "bias", "running_mean", "running_var"})
    c.expect(r, c.channels("x"));
}

template <class T> void forward(const StepArgs<T>& c) {
  cpu::batchnorm_inference<T>(c.s.attrs, c.in("x"), c.in("weight").data, c.in("bias").data,
                              c.in("running_mean").data, c.in("running_var").data, c.out("y"));
  cpu::epilogue(c);
}

// The chunk sums a forward_train or backward may read (batchnorm_chunks.hpp): [R, sums, C]
// with 1 <= R <= M, written by the batchnorm.partials before it. The references compute the
// statistics from x and ignore them.
void check_partial(const StepCheck& c, bool backward) {
  if (!c.has("partial")) return;
  const Shape& x = c.shape("x");
  const Shape& p = c.shape("partial");
  const int64_t rows = numel(x) / x[1];
  if (p.size() != 3 || p[0] < 1 || p[0] > rows || p[1] != bn_partial_sums(backward) || p[2] != x[1])
    c.fail(cat("\"partial\" ", shape_str(p), " is not [R, ", bn_partial_sums(backward), ", ", x[1],
               "] with 1 <= R <= ", rows));
}

// batchnorm.forward_train: x, weight, bias, [partial], [residual] -> y, [mean, invstd] (batch
// statistics; y through the epilogue: the residual added, then the activation).
constexpr sv train_in[] = {"x", "weight", "bias", "partial", "residual"},
             train_out[] = {"y", "mean", "invstd"};
constexpr sv stats[] = {"mean", "invstd"}, stats_partial[] = {"mean", "invstd", "partial"};
constexpr sv train_optional[] = {"mean", "invstd", "partial", "residual"};

void check_forward_train(const StepCheck& c) {
  c.expect("y", c.forward(c.shape("x")));
  for (auto r : {"weight", "bias", "mean", "invstd"})
    if (c.has(r)) c.expect(r, c.channels("x"));
  if (c.has("residual")) c.same("x", "residual");
  check_partial(c, false);
}

template <class T> void forward_train(const StepArgs<T>& c) {
  cpu::batchnorm_train<T>(c.s.attrs, c.in("x"), c.in("weight").data, c.in("bias").data, c.out("y"),
                          c.opt_out("mean"), c.opt_out("invstd"));
  cpu::epilogue(c); // a residual and activation fused into it (rewrite/batchnorm_activation.cpp)
}

// batchnorm.backward: x, dy, weight, [mean, invstd], [relu_y] -> dx, dweight, dbias; without
// the saved statistics they are recomputed from x exactly as the forward computes them (kiln's
// plans do this: it keeps nothing but x alive for the backward). relu_y: the output of a relu
// after the batchnorm, whose backward is fused in: dy counts where relu_y > 0 (zero elsewhere,
// as relu.backward's dx; generator/rewrite/batchnorm_relu_backward.cpp).
constexpr sv bw_in[] = {"x", "dy", "weight", "mean", "invstd", "partial", "relu_y"};
constexpr sv bw_out[] = {"dx", "dweight", "dbias"};
constexpr sv bw_optional[] = {"mean", "invstd", "partial", "relu_y"};

// dy as the fused relu's backward passes it (relu_y given: zero where relu_y <= 0, as
// cpu::relu_backward's dx), else dy itself; `keep` holds the masked copy.
template <class T> CView<T> relu_masked_dy(const StepArgs<T>& c, std::vector<T>& keep) {
  const CView<T> dy = c.in("dy");
  if (c.s.arg("relu_y") < 0) return dy;
  const T* y = c.in("relu_y").data;
  keep.assign(dy.data, dy.data + numel(dy.shape));
  for (size_t i = 0; i < keep.size(); ++i)
    if (y[i] <= T(0)) keep[i] = T(0);
  return CView<T>{keep.data(), dy.shape};
}

void check_backward(const StepCheck& c) {
  c.same("x", "dy");
  c.same("x", "dx");
  if (c.has("relu_y")) c.same("x", "relu_y");
  for (auto r : {"weight", "mean", "invstd", "dweight", "dbias"})
    if (c.has(r)) c.expect(r, c.channels("x"));
  if (c.has("mean") != c.has("invstd")) c.fail("mean and invstd come together or not at all");
  if (c.has("partial") && c.has("mean"))
    c.fail("\"partial\" stands for the statistics the step would recompute: not with saved ones");
  check_partial(c, true);
}

template <class T> void backward(const StepArgs<T>& c) {
  const bool acc = c.s.accumulate;
  std::vector<T> masked;
  const CView<T> dy = relu_masked_dy(c, masked);
  if (c.s.arg("mean") >= 0)
    return cpu::batchnorm_backward<T>(c.in("x"), dy, c.in("weight").data, c.in("mean").data,
                                      c.in("invstd").data, c.out("dx"), c.out("dweight").data,
                                      c.out("dbias").data, acc);
  CView<T> x = c.in("x");
  std::vector<T> y(size_t(numel(x.shape))), mean(size_t(x.shape[1])), invstd(size_t(x.shape[1]));
  cpu::batchnorm_train<T>(c.s.attrs, x, c.in("weight").data, nullptr, View<T>{y.data(), x.shape},
                          mean.data(), invstd.data());
  cpu::batchnorm_backward<T>(x, dy, c.in("weight").data, mean.data(), invstd.data(), c.out("dx"),
                             c.out("dweight").data, c.out("dbias").data, acc);
}

// batchnorm.partials: x, [dy, [relu_y]] -> partial [R, 2 (4 with dy), C] fp32: chunk r's
// shifted sums (batchnorm_chunks.hpp), for the forward_train (without dy) or backward (with)
// after it; relu_y masks dy as the backward's.
constexpr sv partials_in[] = {"x", "dy", "relu_y"}, partials_dy[] = {"dy", "relu_y"};

void check_partials(const StepCheck& c) {
  const Shape& x = c.shape("x");
  if (x.size() != 4 && x.size() != 2)
    c.fail(cat("x is ", shape_str(x), ", not [N, C, H, W] or [N, C]"));
  if (c.has("dy")) c.same("x", "dy");
  if (c.has("relu_y") && !c.has("dy")) c.fail("relu_y masks dy: not without it");
  if (c.has("relu_y")) c.same("x", "relu_y");
  check_partial(c, c.has("dy"));
  c.not_accumulated();
}

template <class T> void partials(const StepArgs<T>& c) {
  CView<T> x = c.in("x");
  View<T> part = c.out("partial");
  const int64_t N = x.shape[0], C = x.shape[1];
  std::vector<T> masked;
  const T* dy = c.s.arg("dy") >= 0 ? relu_masked_dy(c, masked).data : nullptr;
  bn_chunk_sums(x.data, dy, N, C, numel(x.shape) / (N * C), part.shape[0], part.data);
}

constexpr FnDef fn_defs[] = {
    {.fn = Fn::batchnorm_forward,
     .name = "batchnorm.forward",
     .signature = {fwd_in, roles::y_compacted, roles::y_form, roles::y_nnz},
     .epilogue = true,
     .check = check_forward,
     .cpu_f32 = forward<float>,
     .cpu_f64 = forward<double>},
    {.fn = Fn::batchnorm_forward_train,
     .name = "batchnorm.forward_train",
     .signature = {train_in, train_out, train_optional},
     .epilogue = true,
     .check = check_forward_train,
     .cpu_f32 = forward_train<float>,
     .cpu_f64 = forward_train<double>},
    {.fn = Fn::batchnorm_backward,
     .name = "batchnorm.backward",
     .signature = {bw_in, bw_out, bw_optional},
     .check = check_backward,
     .cpu_f32 = backward<float>,
     .cpu_f64 = backward<double>},
    {.fn = Fn::batchnorm_partials,
     .name = "batchnorm.partials",
     .signature = {partials_in, roles::partial, partials_dy},
     .check = check_partials,
     .cpu_f32 = partials<float>,
     .cpu_f64 = partials<double>},
};

} // namespace

namespace ops {
OpFile batchnorm_file() { return {op_defs, fn_defs}; }
} // namespace ops

} // namespace kiln
