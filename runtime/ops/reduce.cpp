// reduce_sum, reduce_mean, reduce_max: ONNX ReduceSum / ReduceMean / ReduceMax over any
// non-empty set of the axes C, H, W of [N, C, H, W] (C alone for [N, C]). With keepdims the
// reduced axes stay as 1, without they are dropped (the rank ONNX gives: [N, H, W] for C
// alone, [N, C] for H and W, [N] for all three); either way the outputs lie in the same
// order. Functions: the forward and the backward (dy spread back over each output's
// elements: as is, divided by their count, or to the first maximum only).
#include "runtime/cpu/step_args.hpp"
#include "runtime/error.hpp"
#include "runtime/ops/registry.hpp"
#include "runtime/ops/roles.hpp"
#include "runtime/ops/step_check.hpp"

namespace kiln {

namespace {

using cpu::Reduce;
using cpu::StepArgs;
using sv = std::string_view;

constexpr AttrSpec attrs[] = {{"reduce_c", AttrType::boolean, false},
                              {"reduce_h", AttrType::boolean, false},
                              {"reduce_w", AttrType::boolean, false},
                              {"keepdims", AttrType::boolean, false}};

Shape shape(const Attrs& a, std::span<const Shape> in) {
  const Shape& x = in[0];
  if (x.size() != 4 && x.size() != 2)
    throw Error(cat("reduce expects [N, C, H, W] or [N, C], got ", shape_str(x)));
  if (x.size() == 2 && (a.reduce_h || a.reduce_w))
    throw Error(cat("reduce: [N, C] ", shape_str(x), " has no H or W to reduce"));
  if (!a.reduce_c && !a.reduce_h && !a.reduce_w)
    throw Error("reduce needs at least one of reduce_c, reduce_h, reduce_w");
  const bool r[] = {false, a.reduce_c, a.reduce_h, a.reduce_w};
  Shape y;
  for (size_t d = 0; d < x.size(); ++d)
    if (!r[d])
      y.push_back(x[d]);
    else if (a.keepdims)
      y.push_back(1);
  return y;
}

// thop counts a reduction as one operation per input element.
int64_t thop_flops(const Attrs&, std::span<const Shape> in, const Shape&) { return numel(in[0]); }

constexpr OpDef op_defs[] = {
    {.kind = OpKind::reduce_sum,
     .name = "reduce_sum",
     .attrs = attrs,
     .shape = shape,
     .thop_flops = thop_flops},
    {.kind = OpKind::reduce_mean,
     .name = "reduce_mean",
     .attrs = attrs,
     .shape = shape,
     .thop_flops = thop_flops},
    {.kind = OpKind::reduce_max,
     .name = "reduce_max",
     .attrs = attrs,
     .shape = shape,
     .thop_flops = thop_flops},
};

// <op>.forward: x -> y.
void check_forward(const StepCheck& c) { c.expect("y", c.forward(c.shape("x"))); }

template <Reduce R, class T> void forward(const StepArgs<T>& c) {
  cpu::reduce<T>(R, c.s.attrs, c.in("x"), c.out("y"));
}

// <op>.backward: [x], dy -> dx (x, which max reads, has dx's shape).
constexpr sv dy_in[] = {"dy"};

void check_backward(const StepCheck& c) {
  if (c.has("x")) c.same("x", "dx");
  c.expect("dy", c.forward(c.shape("dx")));
}

template <Reduce R, class T> void backward(const StepArgs<T>& c) {
  cpu::reduce_backward<T>(R, c.s.attrs, R == Reduce::max ? c.in("x").data : nullptr, c.in("dy"),
                          c.out("dx"), c.s.accumulate);
}

constexpr FnDef fn_defs[] = {
    {.fn = Fn::reduce_sum_forward,
     .name = "reduce_sum.forward",
     .signature = {roles::x, roles::y},
     .check = check_forward,
     .cpu_f32 = forward<Reduce::sum, float>,
     .cpu_f64 = forward<Reduce::sum, double>},
    {.fn = Fn::reduce_sum_backward,
     .name = "reduce_sum.backward",
     .signature = {dy_in, roles::dx},
     .check = check_backward,
     .cpu_f32 = backward<Reduce::sum, float>,
     .cpu_f64 = backward<Reduce::sum, double>},
    {.fn = Fn::reduce_mean_forward,
     .name = "reduce_mean.forward",
     .signature = {roles::x, roles::y},
     .check = check_forward,
     .cpu_f32 = forward<Reduce::mean, float>,
     .cpu_f64 = forward<Reduce::mean, double>},
    {.fn = Fn::reduce_mean_backward,
     .name = "reduce_mean.backward",
     .signature = {dy_in, roles::dx},
     .check = check_backward,
     .cpu_f32 = backward<Reduce::mean, float>,
     .cpu_f64 = backward<Reduce::mean, double>},
    {.fn = Fn::reduce_max_forward,
     .name = "reduce_max.forward",
     .signature = {roles::x, roles::y},
     .check = check_forward,
     .cpu_f32 = forward<Reduce::max, float>,
     .cpu_f64 = forward<Reduce::max, double>},
    {.fn = Fn::reduce_max_backward,
     .name = "reduce_max.backward",
     .signature = {roles::x_dy, roles::dx},
     .check = check_backward,
     .cpu_f32 = backward<Reduce::max, float>,
     .cpu_f64 = backward<Reduce::max, double>},
};

} // namespace

namespace ops {
OpFile reduce_file() { return {op_defs, fn_defs}; }
} // namespace ops

} // namespace kiln
