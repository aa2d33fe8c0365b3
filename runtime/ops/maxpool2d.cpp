// maxpool2d: the op and its functions (forward, backward: the gradient goes to the first
// maximum of each window, as PyTorch).
#include "runtime/cpu/step_args.hpp"
#include "runtime/ops/registry.hpp"
#include "runtime/ops/roles.hpp"
#include "runtime/ops/shape_rules.hpp"
#include "runtime/ops/step_check.hpp"

namespace kiln {

namespace {

using namespace shape_rules;
using cpu::StepArgs;

constexpr AttrSpec attrs[] = {{"kernel", AttrType::int2, true},
                              {"stride", AttrType::int2, false},
                              {"padding", AttrType::int2, false},
                              {"padding_end", AttrType::int2, false},
                              {"ceil_mode", AttrType::boolean, false}};

Shape shape(const Attrs& a, std::span<const Shape> in) {
  const Shape& x = in[0];
  need_rank(x, 4, "[N, C, H, W]");
  check_positive(a.kernel, "kernel");
  check_positive(a.stride, "stride");
  check_padding(a);
  check_pool_padding(a);
  return window_shape(x, x[1], a, a.kernel, {1, 1}, a.ceil_mode, "maxpool2d");
}

constexpr OpDef op_defs[] = {
    {.kind = OpKind::maxpool2d, .name = "maxpool2d", .attrs = attrs, .shape = shape}};

void check_forward(const StepCheck& c) { c.expect("y", c.forward(c.shape("x"))); }

template <class T> void forward(const StepArgs<T>& c) {
  cpu::maxpool2d<T>(c.s.attrs, c.in("x"), c.out("y"));
}

// maxpool2d.backward: x, dy -> dx.
void check_backward(const StepCheck& c) {
  c.same("x", "dx");
  c.expect("dy", c.forward(c.shape("x")));
}

template <class T> void backward(const StepArgs<T>& c) {
  cpu::maxpool2d_backward<T>(c.s.attrs, c.in("x"), c.in("dy"), c.out("dx"), c.s.accumulate);
}

constexpr FnDef fn_defs[] = {
    {.fn = Fn::maxpool2d_forward,
     .name = "maxpool2d.forward",
     .signature = {roles::x, roles::y, {}},
     .check = check_forward,
     .cpu_f32 = forward<float>,
     .cpu_f64 = forward<double>,
     .per_image = roles::x_y},
    {.fn = Fn::maxpool2d_backward,
     .name = "maxpool2d.backward",
     .signature = {roles::x_dy, roles::dx, {}},
     .check = check_backward,
     .cpu_f32 = backward<float>,
     .cpu_f64 = backward<double>,
     .per_image = roles::x_dy_dx},
};

} // namespace

namespace ops {
OpFile maxpool2d_file() { return {op_defs, fn_defs}; }
} // namespace ops

} // namespace kiln
