// layernorm: each position of [N, C, H, W] or [N, C] normalised over its C channels, then
// scaled and shifted per channel (ONNX LayerNormalization over the channel axis, as
// ConvNeXt writes it around channels-last transposes). Functions: the forward; the backward
// (dx, and the per-position statistics it computes on the way when asked); the parameter
// gradients from those statistics (a reduction over positions, per channel).
#include "runtime/cpu/step_args.hpp"
#include "runtime/error.hpp"
#include "runtime/ops/registry.hpp"
#include "runtime/ops/roles.hpp"
#include "runtime/ops/step_check.hpp"

namespace kiln {

namespace {

using cpu::StepArgs;
using sv = std::string_view;

constexpr AttrSpec attrs[] = {{"eps", AttrType::number, false}};

Shape shape(const Attrs& a, std::span<const Shape> in) {
  const Shape& x = in[0];
  if (x.size() != 4 && x.size() != 2)
    throw Error(cat("layernorm expects [N, C, H, W] or [N, C], got ", shape_str(x)));
  if (!(a.eps > 0) || a.eps > 1) throw Error("", "eps", cat("must be in (0, 1], got ", a.eps));
  return x;
}

std::vector<ParamSpec> params(const Attrs&, std::span<const Shape> in) {
  const int64_t c = in[0][1];
  return {{"weight", {c}, true}, {"bias", {c}, true}};
}

// thop counts layer norm as batchnorm: a normalisation and an affine map per element.
int64_t thop_flops(const Attrs&, std::span<const Shape> in, const Shape&) {
  return 2 * 2 * numel(in[0]);
}

constexpr OpDef op_defs[] = {{.kind = OpKind::layernorm,
                              .name = "layernorm",
                              .attrs = attrs,
                              .shape = shape,
                              .params = params,
                              .thop_flops = thop_flops}};

// The per-position statistics: x's shape with one channel.
Shape stats_shape(const Shape& x) {
  Shape s = x;
  s[1] = 1;
  return s;
}

// layernorm.forward: x, weight, bias -> y.
constexpr sv fwd_in[] = {"x", "weight", "bias"};

void check_forward(const StepCheck& c) {
  c.expect("y", c.forward(c.shape("x")));
  for (auto r : {"weight", "bias"})
    c.expect(r, c.channels("x"));
}

template <class T> void forward(const StepArgs<T>& c) {
  cpu::layernorm<T>(c.s.attrs.eps, c.in("x"), c.in("weight").data, c.in("bias").data, c.out("y"));
}

// layernorm.backward: x, dy, weight -> dx, [mean, invstd] (statistics recomputed from x).
constexpr sv bw_in[] = {"x", "dy", "weight"}, bw_out[] = {"dx", "mean", "invstd"};
constexpr sv stats[] = {"mean", "invstd"};

void check_backward(const StepCheck& c) {
  c.same("x", "dy");
  c.same("x", "dx");
  c.expect("weight", c.channels("x"));
  if (c.has("mean") != c.has("invstd")) c.fail("mean and invstd come together or not at all");
  for (auto r : stats)
    if (c.has(r)) c.expect(r, stats_shape(c.shape("x")));
}

template <class T> void backward(const StepArgs<T>& c) {
  cpu::layernorm_backward<T>(c.s.attrs.eps, c.in("x"), c.in("dy"), c.in("weight").data, c.out("dx"),
                             c.opt_out("mean"), c.opt_out("invstd"), c.s.accumulate);
}

// layernorm.backward_params: x, dy, mean, invstd -> dweight, dbias.
constexpr sv bp_in[] = {"x", "dy", "mean", "invstd"}, bp_out[] = {"dweight", "dbias"};

void check_backward_params(const StepCheck& c) {
  c.same("x", "dy");
  for (auto r : stats)
    c.expect(r, stats_shape(c.shape("x")));
  for (auto r : bp_out)
    c.expect(r, c.channels("x"));
}

template <class T> void backward_params(const StepArgs<T>& c) {
  cpu::layernorm_backward_params<T>(c.in("x"), c.in("dy"), c.in("mean").data, c.in("invstd").data,
                                    c.out("dweight").data, c.out("dbias").data, c.s.accumulate);
}

constexpr FnDef fn_defs[] = {
    {.fn = Fn::layernorm_forward,
     .name = "layernorm.forward",
     .signature = {fwd_in, roles::y},
     .check = check_forward,
     .cpu_f32 = forward<float>,
     .cpu_f64 = forward<double>},
    {.fn = Fn::layernorm_backward,
     .name = "layernorm.backward",
     .signature = {bw_in, bw_out, stats},
     .check = check_backward,
     .cpu_f32 = backward<float>,
     .cpu_f64 = backward<double>},
    {.fn = Fn::layernorm_backward_params,
     .name = "layernorm.backward_params",
     .signature = {bp_in, bp_out},
     .check = check_backward_params,
     .cpu_f32 = backward_params<float>,
     .cpu_f64 = backward_params<double>},
};

} // namespace

namespace ops {
OpFile layernorm_file() { return {op_defs, fn_defs}; }
} // namespace ops

} // namespace kiln
