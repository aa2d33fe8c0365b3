// softmax (over axis 1, any rank >= 2): the op and its functions (forward; backward from the
// forward's output).
#include "runtime/cpu/step_args.hpp"
#include "runtime/error.hpp"
#include "runtime/ops/registry.hpp"
#include "runtime/ops/roles.hpp"
#include "runtime/ops/step_check.hpp"

namespace kiln {

namespace {

using cpu::StepArgs;

Shape shape(const Attrs&, std::span<const Shape> in) {
  const Shape& x = in[0];
  if (x.size() < 2) throw Error(cat("softmax needs at least 2 dimensions, got ", shape_str(x)));
  return x;
}

// thop: an exponential, a sum and a division per element, less one addition per row.
int64_t thop_flops(const Attrs&, std::span<const Shape>, const Shape& y) {
  return 2 * numel(y) / y[1] * (3 * y[1] - 1);
}

constexpr OpDef op_defs[] = {{.kind = OpKind::softmax,
                              .name = "softmax",
                              .shape = shape,
                              .thop_flops = thop_flops,
                              .rowwise = true}};

void check_forward(const StepCheck& c) { c.expect("y", c.forward(c.shape("x"))); }

template <class T> void forward(const StepArgs<T>& c) { cpu::softmax<T>(c.in("x"), c.out("y")); }

// softmax.backward: y, dy -> dx.
void check_backward(const StepCheck& c) {
  c.same("y", "dy");
  c.same("y", "dx");
}

template <class T> void backward(const StepArgs<T>& c) {
  cpu::softmax_backward<T>(c.in("y"), c.in("dy"), c.out("dx"), c.s.accumulate);
}

constexpr FnDef fn_defs[] = {
    {.fn = Fn::softmax_forward,
     .name = "softmax.forward",
     .signature = {roles::x, roles::y, {}},
     .check = check_forward,
     .cpu_f32 = forward<float>,
     .cpu_f64 = forward<double>},
    {.fn = Fn::softmax_backward,
     .name = "softmax.backward",
     .signature = {roles::y_dy, roles::dx, {}},
     .check = check_backward,
     .cpu_f32 = backward<float>,
     .cpu_f64 = backward<double>},
};

} // namespace

namespace ops {
OpFile softmax_file() { return {op_defs, fn_defs}; }
} // namespace ops

} // namespace kiln
