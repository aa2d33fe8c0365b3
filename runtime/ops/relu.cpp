// relu: the op and its functions (forward, which may compact its output, and backward).
#include "runtime/cpu/step_args.hpp"
#include "runtime/ops/registry.hpp"
#include "runtime/ops/roles.hpp"
#include "runtime/ops/step_check.hpp"

namespace kiln {

namespace {

using cpu::StepArgs;

Shape shape(const Attrs&, std::span<const Shape> in) { return in[0]; }

constexpr OpDef op_defs[] = {
    {.kind = OpKind::relu, .name = "relu", .shape = shape, .rowwise = true}}; // thop: no FLOPs

// relu.forward: x -> y, [compacted y].
void check_forward(const StepCheck& c) { c.expect("y", c.forward(c.shape("x"))); }

template <class T> void forward(const StepArgs<T>& c) { cpu::relu<T>(c.in("x"), c.out("y")); }

// relu.backward: y, dy -> dx (dy where the forward's output is positive).
void check_backward(const StepCheck& c) {
  c.same("y", "dy");
  c.same("y", "dx");
}

template <class T> void backward(const StepArgs<T>& c) {
  cpu::relu_backward<T>(c.in("y"), c.in("dy"), c.out("dx"), c.s.accumulate);
}

constexpr FnDef fn_defs[] = {
    {.fn = Fn::relu_forward,
     .name = "relu.forward",
     .signature = {roles::x, roles::y_compacted, roles::y_form, roles::y_nnz},
     .check = check_forward,
     .cpu_f32 = forward<float>,
     .cpu_f64 = forward<double>,
     .activation = [](const Attrs&) { return Activation::relu; }},
    {.fn = Fn::relu_backward,
     .name = "relu.backward",
     .signature = {roles::y_dy, roles::dx, {}},
     .check = check_backward,
     .cpu_f32 = backward<float>,
     .cpu_f64 = backward<double>},
};

} // namespace

namespace ops {
OpFile relu_file() { return {op_defs, fn_defs}; }
} // namespace ops

} // namespace kiln
