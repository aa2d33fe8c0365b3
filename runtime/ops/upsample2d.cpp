// upsample2d (nearest, integer scale): the op and its functions (forward; backward sums each
// scale x scale block).
#include "runtime/cpu/step_args.hpp"
#include "runtime/ops/registry.hpp"
#include "runtime/ops/roles.hpp"
#include "runtime/ops/shape_rules.hpp"
#include "runtime/ops/step_check.hpp"

namespace kiln {

namespace {

using namespace shape_rules;
using cpu::StepArgs;

constexpr AttrSpec attrs[] = {{"scale", AttrType::integer, false}};

Shape shape(const Attrs& a, std::span<const Shape> in) {
  const Shape& x = in[0];
  need_rank(x, 4, "[N, C, H, W]");
  check_positive(a.scale, "scale", 1 << 10);
  return {x[0], x[1], mul(x[2], a.scale), mul(x[3], a.scale)};
}

constexpr OpDef op_defs[] = {
    {.kind = OpKind::upsample2d, .name = "upsample2d", .attrs = attrs, .shape = shape}};

void check_forward(const StepCheck& c) { c.expect("y", c.forward(c.shape("x"))); }

template <class T> void forward(const StepArgs<T>& c) {
  cpu::upsample2d<T>(c.s.attrs, c.in("x"), c.out("y"));
}

void check_backward(const StepCheck& c) { c.expect("dy", c.forward(c.shape("dx"))); }

template <class T> void backward(const StepArgs<T>& c) {
  cpu::upsample2d_backward<T>(c.s.attrs, c.in("dy"), c.out("dx"), c.s.accumulate);
}

constexpr FnDef fn_defs[] = {
    {.fn = Fn::upsample2d_forward,
     .name = "upsample2d.forward",
     .signature = {roles::x, roles::y, {}},
     .check = check_forward,
     .cpu_f32 = forward<float>,
     .cpu_f64 = forward<double>},
    {.fn = Fn::upsample2d_backward,
     .name = "upsample2d.backward",
     .signature = {roles::dy, roles::dx, {}},
     .check = check_backward,
     .cpu_f32 = backward<float>,
     .cpu_f64 = backward<double>},
};

} // namespace

namespace ops {
OpFile upsample2d_file() { return {op_defs, fn_defs}; }
} // namespace ops

} // namespace kiln
