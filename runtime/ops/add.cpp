// add: the op (2+ inputs of one shape) and add.forward. Its backward is a copy of dy per
// input (copy.cpp).
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
  for (size_t i = 1; i < in.size(); ++i)
    if (in[i] != x)
      throw Error(cat("add inputs differ in shape: input 0 is ", shape_str(x), ", input ", i,
                      " is ", shape_str(in[i])));
  return x;
}

constexpr OpDef op_defs[] = {
    {.kind = OpKind::add, .name = "add", .arity = {2, true}, .shape = shape}};

// add.forward: x0, x1, ... -> y.
void check_forward(const StepCheck& c) {
  const std::vector<Shape> xs = c.inputs();
  if (xs.size() < 2) c.fail("needs at least two inputs x0, x1");
  c.expect("y", c.forward(xs));
}

template <class T> void forward(const StepArgs<T>& c) {
  const auto xs = c.inputs();
  cpu::add<T>(xs, c.out("y"));
}

constexpr FnDef fn_defs[] = {{.fn = Fn::add_forward,
                              .name = "add.forward",
                              .signature = {roles::xs, roles::y, {}},
                              .check = check_forward,
                              .cpu_f32 = forward<float>,
                              .cpu_f64 = forward<double>}};

} // namespace

namespace ops {
OpFile add_file() { return {op_defs, fn_defs}; }
} // namespace ops

} // namespace kiln
