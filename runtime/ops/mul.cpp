// mul: x0 * x1, x1 of x0's shape or x0's [N, C, 1, 1] broadcast over H and W (the gate of a
// squeeze-excite block; SiLU and GELU written out are activations, not this). Its backward
// gives either input's gradient from the other input and dy.
#include "runtime/cpu/step_args.hpp"
#include "runtime/error.hpp"
#include "runtime/ops/registry.hpp"
#include "runtime/ops/roles.hpp"
#include "runtime/ops/step_check.hpp"

namespace kiln {

namespace {

using cpu::StepArgs;

Shape shape(const Attrs&, std::span<const Shape> in) {
  const Shape &a = in[0], &b = in[1];
  if (b != a && !(a.size() == 4 && b == Shape{a[0], a[1], 1, 1}))
    throw Error(cat("mul takes x1 of x0's shape ", shape_str(a), " or [N, C, 1, 1] of it, got ",
                    shape_str(b)));
  return a;
}

constexpr OpDef op_defs[] = {
    {.kind = OpKind::mul, .name = "mul", .arity = {2, false}, .shape = shape}};

constexpr std::string_view x01[] = {"x0", "x1"}, other_dy[] = {"x", "dy"};

// mul.forward: x0, x1 -> y.
void check_forward(const StepCheck& c) { c.expect("y", c.forward(c.inputs())); }

template <class T> void forward(const StepArgs<T>& c) {
  cpu::mul<T>(c.in("x0"), c.in("x1"), c.out("y"));
}

// mul.backward: x (the other input), dy -> dx (dy's shape, or [N, C, 1, 1]: summed over H, W).
void check_backward(const StepCheck& c) {
  const Shape &x = c.shape("x"), &dy = c.shape("dy"), &dx = c.shape("dx");
  const bool full = dx == dy && (x == dy || (dy.size() == 4 && x == Shape{dy[0], dy[1], 1, 1}));
  const bool reduced = x == dy && dy.size() == 4 && dx == Shape{dy[0], dy[1], 1, 1};
  if (!full && !reduced)
    c.fail(cat("x ", shape_str(x), ", dy ", shape_str(dy), " and dx ", shape_str(dx),
               " are no product's gradient"));
}

template <class T> void backward(const StepArgs<T>& c) {
  cpu::mul_backward<T>(c.in("x"), c.in("dy"), c.out("dx"), c.s.accumulate);
}

constexpr FnDef fn_defs[] = {{.fn = Fn::mul_forward,
                              .name = "mul.forward",
                              .signature = {x01, roles::y},
                              .check = check_forward,
                              .cpu_f32 = forward<float>,
                              .cpu_f64 = forward<double>},
                             {.fn = Fn::mul_backward,
                              .name = "mul.backward",
                              .signature = {other_dy, roles::dx},
                              .check = check_backward,
                              .cpu_f32 = backward<float>,
                              .cpu_f64 = backward<double>}};

} // namespace

namespace ops {
OpFile mul_file() { return {op_defs, fn_defs}; }
} // namespace ops

} // namespace kiln
