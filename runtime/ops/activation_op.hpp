// What a standalone activation op (clip, hardsigmoid, sigmoid, silu, gelu, gelu_tanh) has in
// common, so its file says only its name, attributes and Activation: y has x's shape, the
// forward applies runtime/activation.cpp's function (the one fused epilogues share), the
// backward reads the forward's input x.
#pragma once

#include "runtime/cpu/step_args.hpp"
#include "runtime/ops/registry.hpp"
#include "runtime/ops/roles.hpp"
#include "runtime/ops/step_check.hpp"

#include <array>

namespace kiln::activation_op {

inline Shape shape(const Attrs&, std::span<const Shape> in) { return in[0]; }

// <op>.forward: x -> y.
inline void check_forward(const StepCheck& c) { c.expect("y", c.forward(c.shape("x"))); }

// <op>.backward: x, dy -> dx.
inline void check_backward(const StepCheck& c) {
  c.same("x", "dy");
  c.same("x", "dx");
}

template <class T, Activation (*Act)(const Attrs&)> void forward(const cpu::StepArgs<T>& c) {
  cpu::activation<T>(Act(c.s.attrs), c.in("x"), c.out("y"));
}

template <class T, Activation (*Act)(const Attrs&)> void backward(const cpu::StepArgs<T>& c) {
  cpu::activation_backward<T>(Act(c.s.attrs), c.in("x"), c.in("dy"), c.out("dx"), c.s.accumulate);
}

// The forward and backward FnDefs of an activation op.
template <Activation (*Act)(const Attrs&)>
constexpr std::array<FnDef, 2> fns(Fn fwd, std::string_view fwd_name, Fn bwd,
                                   std::string_view bwd_name) {
  return {FnDef{.fn = fwd,
                .name = fwd_name,
                .signature = {roles::x, roles::y},
                .check = check_forward,
                .cpu_f32 = forward<float, Act>,
                .cpu_f64 = forward<double, Act>,
                .activation = Act},
          FnDef{.fn = bwd,
                .name = bwd_name,
                .signature = {roles::x_dy, roles::dx},
                .check = check_backward,
                .cpu_f32 = backward<float, Act>,
                .cpu_f64 = backward<double, Act>}};
}

} // namespace kiln::activation_op
