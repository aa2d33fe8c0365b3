// hardswish: x * relu6(x + 3) / 6 (MobileNetV3), the op and its functions. Its backward reads
// the forward's input. The formula is runtime/activation.cpp's, which fused epilogues share.
#include "runtime/cpu/step_args.hpp"
#include "runtime/ops/registry.hpp"
#include "runtime/ops/roles.hpp"
#include "runtime/ops/step_check.hpp"

namespace kiln {

namespace {

using cpu::StepArgs;

Shape shape(const Attrs&, std::span<const Shape> in) { return in[0]; }

constexpr OpDef op_defs[] = {{.kind = OpKind::hardswish,
                              .name = "hardswish",
                              .shape = shape,
                              .rowwise = true}}; // thop counts no activations

// hardswish.forward: x -> y.
void check_forward(const StepCheck& c) { c.expect("y", c.forward(c.shape("x"))); }

template <class T> void forward(const StepArgs<T>& c) {
  cpu::activation<T>(Activation::hardswish, c.in("x"), c.out("y"));
}

// hardswish.backward: x, dy -> dx.
void check_backward(const StepCheck& c) {
  c.same("x", "dy");
  c.same("x", "dx");
}

template <class T> void backward(const StepArgs<T>& c) {
  cpu::activation_backward<T>(Activation::hardswish, c.in("x"), c.in("dy"), c.out("dx"),
                              c.s.accumulate);
}

constexpr FnDef fn_defs[] = {
    {.fn = Fn::hardswish_forward,
     .name = "hardswish.forward",
     .signature = {roles::x, roles::y},
     .check = check_forward,
     .cpu_f32 = forward<float>,
     .cpu_f64 = forward<double>,
     .activation = [](const Attrs&) { return Activation::hardswish; }},
    {.fn = Fn::hardswish_backward,
     .name = "hardswish.backward",
     .signature = {roles::x_dy, roles::dx},
     .check = check_backward,
     .cpu_f32 = backward<float>,
     .cpu_f64 = backward<double>},
};

} // namespace

namespace ops {
OpFile hardswish_file() { return {op_defs, fn_defs}; }
} // namespace ops

} // namespace kiln
