// avgpool2d: the op and its functions (forward, backward; PyTorch's divisor rules,
// count_include_pad and ceil_mode windows clipped at the padded border).
#include "runtime/cpu/step_args.hpp"
#include "runtime/ops/registry.hpp"
#include "runtime/ops/roles.hpp"
#include "runtime/ops/shape_rules.hpp"
#include "runtime/ops/step_check.hpp"

namespace kiln {

namespace {

using namespace shape_rules;
using cpu::StepArgs;

constexpr AttrSpec attrs[] = {
    {"kernel", AttrType::int2, true},        {"stride", AttrType::int2, false},
    {"padding", AttrType::int2, false},      {"padding_end", AttrType::int2, false},
    {"ceil_mode", AttrType::boolean, false}, {"count_include_pad", AttrType::boolean, false}};

Shape shape(const Attrs& a, std::span<const Shape> in) {
  const Shape& x = in[0];
  need_rank(x, 4, "[N, C, H, W]");
  check_positive(a.kernel, "kernel");
  check_positive(a.stride, "stride");
  check_padding(a);
  check_pool_padding(a);
  return window_shape(x, x[1], a, a.kernel, {1, 1}, a.ceil_mode, "avgpool2d");
}

int64_t thop_flops(const Attrs&, std::span<const Shape>, const Shape& y) { return 2 * numel(y); }

constexpr OpDef op_defs[] = {{.kind = OpKind::avgpool2d,
                              .name = "avgpool2d",
                              .attrs = attrs,
                              .shape = shape,
                              .thop_flops = thop_flops}};

void check_forward(const StepCheck& c) { c.expect("y", c.forward(c.shape("x"))); }

template <class T> void forward(const StepArgs<T>& c) {
  cpu::avgpool2d<T>(c.s.attrs, c.in("x"), c.out("y"));
}

// avgpool2d.backward: dy -> dx.
void check_backward(const StepCheck& c) { c.expect("dy", c.forward(c.shape("dx"))); }

template <class T> void backward(const StepArgs<T>& c) {
  cpu::avgpool2d_backward<T>(c.s.attrs, c.in("dy"), c.out("dx"), c.s.accumulate);
}

constexpr FnDef fn_defs[] = {
    {.fn = Fn::avgpool2d_forward,
     .name = "avgpool2d.forward",
     .signature = {roles::x, roles::y, {}},
     .check = check_forward,
     .cpu_f32 = forward<float>,
     .cpu_f64 = forward<double>,
     .per_image = roles::x_y},
    {.fn = Fn::avgpool2d_backward,
     .name = "avgpool2d.backward",
     .signature = {roles::dy, roles::dx, {}},
     .check = check_backward,
     .cpu_f32 = backward<float>,
     .cpu_f64 = backward<double>,
     .per_image = roles::dy_dx},
};

} // namespace

namespace ops {
OpFile avgpool2d_file() { return {op_defs, fn_defs}; }
} // namespace ops

} // namespace kiln
