// layernorm_invstd: each position of [N, C, H, W] or [N, C] gives 1 / sqrt(var + eps) of its
// C channels (the biased variance layernorm normalises by), as [N, 1, H, W] or [N, 1]: ONNX
// LayerNormalization's InvStdDev output where a graph reads it (its Mean is reduce_mean over
// C). Functions: the forward; the backward, dx = -dy * invstd^3 * (x - mean) / C, from x.
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
    throw Error(cat("layernorm_invstd expects [N, C, H, W] or [N, C], got ", shape_str(x)));
  if (!(a.eps > 0) || a.eps > 1) throw Error("", "eps", cat("must be in (0, 1], got ", a.eps));
  Shape y = x;
  y[1] = 1;
  return y;
}

// thop would count the two passes over the channels: a mean and a variance per element.
int64_t thop_flops(const Attrs&, std::span<const Shape> in, const Shape&) {
  return 2 * numel(in[0]);
}

constexpr OpDef op_defs[] = {{.kind = OpKind::layernorm_invstd,
                              .name = "layernorm_invstd",
                              .attrs = attrs,
                              .shape = shape,
                              .thop_flops = thop_flops}};

// layernorm_invstd.forward: x -> y.
void check_forward(const StepCheck& c) { c.expect("y", c.forward(c.shape("x"))); }

template <class T> void forward(const StepArgs<T>& c) {
  cpu::layernorm_invstd<T>(c.s.attrs.eps, c.in("x"), c.out("y"));
}

// layernorm_invstd.backward: x, dy -> dx.
void check_backward(const StepCheck& c) {
  c.same("x", "dx");
  c.expect("dy", c.forward(c.shape("x")));
}

template <class T> void backward(const StepArgs<T>& c) {
  cpu::layernorm_invstd_backward<T>(c.s.attrs.eps, c.in("x"), c.in("dy"), c.out("dx"),
                                    c.s.accumulate);
}

constexpr FnDef fn_defs[] = {
    {.fn = Fn::layernorm_invstd_forward,
     .name = "layernorm_invstd.forward",
     .signature = {roles::x, roles::y},
     .check = check_forward,
     .cpu_f32 = forward<float>,
     .cpu_f64 = forward<double>},
    {.fn = Fn::layernorm_invstd_backward,
     .name = "layernorm_invstd.backward",
     .signature = {roles::x_dy, roles::dx},
     .check = check_backward,
     .cpu_f32 = backward<float>,
     .cpu_f64 = backward<double>},
};

} // namespace

namespace ops {
OpFile layernorm_invstd_file() { return {op_defs, fn_defs}; }
} // namespace ops

} // namespace kiln
