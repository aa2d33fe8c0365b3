// adaptive_avgpool2d and global_avgpool (its 1x1 case): the ops and their functions
// (forward, backward; PyTorch's windows).
#include "runtime/cpu/step_args.hpp"
#include "runtime/ops/registry.hpp"
#include "runtime/ops/roles.hpp"
#include "runtime/ops/shape_rules.hpp"
#include "runtime/ops/step_check.hpp"

namespace kiln {

namespace {

using namespace shape_rules;
using cpu::StepArgs;

constexpr AttrSpec attrs[] = {{"output_size", AttrType::int2, true}};

Shape adaptive_shape(const Attrs& a, std::span<const Shape> in) {
  const Shape& x = in[0];
  need_rank(x, 4, "[N, C, H, W]");
  check_positive(a.output_size, "output_size");
  return {x[0], x[1], a.output_size[0], a.output_size[1]};
}

Shape global_shape(const Attrs&, std::span<const Shape> in) {
  const Shape& x = in[0];
  need_rank(x, 4, "[N, C, H, W]");
  return {x[0], x[1], 1, 1};
}

// thop counts each output's window (the whole-number ratio of sizes) plus the division.
int64_t thop_flops(const Attrs&, std::span<const Shape> in, const Shape& y) {
  return 2 * numel(y) * ((in[0][2] / y[2]) * (in[0][3] / y[3]) + 1);
}

constexpr OpDef op_defs[] = {{.kind = OpKind::adaptive_avgpool2d,
                              .name = "adaptive_avgpool2d",
                              .attrs = attrs,
                              .shape = adaptive_shape,
                              .thop_flops = thop_flops},
                             {.kind = OpKind::global_avgpool,
                              .name = "global_avgpool",
                              .shape = global_shape,
                              .thop_flops = thop_flops}};

// The pool to y's spatial size (of either op).
void check_forward(const StepCheck& c) { c.expect("y", c.forward(c.shape("x"))); }

template <class T> void forward(const StepArgs<T>& c) {
  cpu::adaptive_avgpool2d<T>(c.in("x"), c.out("y"));
}

void check_backward(const StepCheck& c) { c.expect("dy", c.forward(c.shape("dx"))); }

template <class T> void backward(const StepArgs<T>& c) {
  cpu::adaptive_avgpool2d_backward<T>(c.in("dy"), c.out("dx"), c.s.accumulate);
}

constexpr FnDef fn_defs[] = {
    {.fn = Fn::adaptive_avgpool2d_forward,
     .name = "adaptive_avgpool2d.forward",
     .signature = {roles::x, roles::y, {}},
     .check = check_forward,
     .cpu_f32 = forward<float>,
     .cpu_f64 = forward<double>},
    {.fn = Fn::adaptive_avgpool2d_backward,
     .name = "adaptive_avgpool2d.backward",
     .signature = {roles::dy, roles::dx, {}},
     .check = check_backward,
     .cpu_f32 = backward<float>,
     .cpu_f64 = backward<double>},
};

} // namespace

namespace ops {
OpFile adaptive_avgpool2d_file() { return {op_defs, fn_defs}; }
} // namespace ops

} // namespace kiln
