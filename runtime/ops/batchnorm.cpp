// batchnorm: the op and its functions (the inference forward, the training forward with
// batch statistics, the backward).
#include "runtime/cpu/step_args.hpp"
#include "runtime/error.hpp"
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

// batchnorm.forward_train: x, weight, bias -> y, [mean, invstd] (batch statistics).
constexpr sv train_in[] = {"x", "weight", "bias"}, train_out[] = {"y", "mean", "invstd"};
constexpr sv stats[] = {"mean", "invstd"};

void check_forward_train(const StepCheck& c) {
  c.expect("y", c.forward(c.shape("x")));
  for (auto r : {"weight", "bias", "mean", "invstd"})
    if (c.has(r)) c.expect(r, c.channels("x"));
}

template <class T> void forward_train(const StepArgs<T>& c) {
  cpu::batchnorm_train<T>(c.s.attrs, c.in("x"), c.in("weight").data, c.in("bias").data, c.out("y"),
                          c.opt_out("mean"), c.opt_out("invstd"));
}

// batchnorm.backward: x, dy, weight, [mean, invstd] -> dx, dweight, dbias; without the saved
// statistics they are recomputed from x exactly as the forward computes them (kiln's plans
// do this: it keeps nothing but x alive for the backward).
constexpr sv bw_in[] = {"x", "dy", "weight", "mean", "invstd"};
constexpr sv bw_out[] = {"dx", "dweight", "dbias"};

void check_backward(const StepCheck& c) {
  c.same("x", "dy");
  c.same("x", "dx");
  for (auto r : {"weight", "mean", "invstd", "dweight", "dbias"})
    if (c.has(r)) c.expect(r, c.channels("x"));
  if (c.has("mean") != c.has("invstd")) c.fail("mean and invstd come together or not at all");
}

template <class T> void backward(const StepArgs<T>& c) {
  const bool acc = c.s.accumulate;
  if (c.s.arg("mean") >= 0)
    return cpu::batchnorm_backward<T>(c.in("x"), c.in("dy"), c.in("weight").data, c.in("mean").data,
                                      c.in("invstd").data, c.out("dx"), c.out("dweight").data,
                                      c.out("dbias").data, acc);
  CView<T> x = c.in("x");
  std::vector<T> y(size_t(numel(x.shape))), mean(size_t(x.shape[1])), invstd(size_t(x.shape[1]));
  cpu::batchnorm_train<T>(c.s.attrs, x, c.in("weight").data, nullptr, View<T>{y.data(), x.shape},
                          mean.data(), invstd.data());
  cpu::batchnorm_backward<T>(x, c.in("dy"), c.in("weight").data, mean.data(), invstd.data(),
                             c.out("dx"), c.out("dweight").data, c.out("dbias").data, acc);
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
     .signature = {train_in, train_out, stats},
     .check = check_forward_train,
     .cpu_f32 = forward_train<float>,
     .cpu_f64 = forward_train<double>},
    {.fn = Fn::batchnorm_backward,
     .name = "batchnorm.backward",
     .signature = {bw_in, bw_out, stats},
     .check = check_backward,
     .cpu_f32 = backward<float>,
     .cpu_f64 = backward<double>},
};

} // namespace

namespace ops {
OpFile batchnorm_file() { return {op_defs, fn_defs}; }
} // namespace ops

} // namespace kiln
