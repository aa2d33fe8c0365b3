// channel_shuffle: ShuffleNet's channel shuffle, which exporters write as Reshape to
// [N, g, C/g, H, W], Transpose(0, 2, 1, 3, 4) and Reshape back: y channel k*g + i is x
// channel i*(C/g) + k. Its gradient is the inverse shuffle (the one with C/g groups).
#include "runtime/cpu/step_args.hpp"
#include "runtime/error.hpp"
#include "runtime/ops/registry.hpp"
#include "runtime/ops/roles.hpp"
#include "runtime/ops/step_check.hpp"

namespace kiln {

namespace {

using cpu::StepArgs;

constexpr AttrSpec attrs[] = {{"groups", AttrType::integer, true}};

Shape shape(const Attrs& a, std::span<const Shape> in) {
  const Shape& x = in[0];
  if (x.size() < 2) throw Error(cat("channel_shuffle needs a channel axis, got ", shape_str(x)));
  if (a.groups < 1 || x[1] % a.groups != 0)
    throw Error("", "groups", cat(a.groups, " does not divide the ", x[1], " channels"));
  return x;
}

constexpr OpDef op_defs[] = {
    {.kind = OpKind::channel_shuffle, .name = "channel_shuffle", .attrs = attrs, .shape = shape}};

void check_forward(const StepCheck& c) { c.expect("y", c.forward(c.shape("x"))); }

template <class T> void forward(const StepArgs<T>& c) {
  cpu::channel_shuffle<T>(c.s.attrs.groups, c.in("x"), c.out("y"));
}

// channel_shuffle.backward: dy -> dx, the shuffle with C / groups groups.
void check_backward(const StepCheck& c) {
  c.same("dy", "dx");
  c.expect("dx", c.forward(c.shape("dy")));
}

template <class T> void backward(const StepArgs<T>& c) {
  const int64_t ch = c.in("dy").shape[1];
  cpu::channel_shuffle<T>(ch / c.s.attrs.groups, c.in("dy"), c.out("dx"), c.s.accumulate);
}

constexpr FnDef fn_defs[] = {{.fn = Fn::channel_shuffle_forward,
                              .name = "channel_shuffle.forward",
                              .signature = {roles::x, roles::y},
                              .check = check_forward,
                              .cpu_f32 = forward<float>,
                              .cpu_f64 = forward<double>},
                             {.fn = Fn::channel_shuffle_backward,
                              .name = "channel_shuffle.backward",
                              .signature = {roles::dy, roles::dx},
                              .check = check_backward,
                              .cpu_f32 = backward<float>,
                              .cpu_f64 = backward<double>}};

} // namespace

namespace ops {
OpFile channel_shuffle_file() { return {op_defs, fn_defs}; }
} // namespace ops

} // namespace kiln
