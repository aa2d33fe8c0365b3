// channel_slice: channels [begin, end) of x (ONNX Split and Slice on the channel axis:
// ShuffleNet's chunk). Its gradient writes dy into those channels and zeros elsewhere, or,
// accumulating, adds dy into those channels only.
#include "runtime/cpu/step_args.hpp"
#include "runtime/error.hpp"
#include "runtime/ops/registry.hpp"
#include "runtime/ops/roles.hpp"
#include "runtime/ops/step_check.hpp"

namespace kiln {

namespace {

using cpu::StepArgs;

constexpr AttrSpec attrs[] = {{"begin", AttrType::integer, true}, {"end", AttrType::integer, true}};

Shape shape(const Attrs& a, std::span<const Shape> in) {
  Shape y = in[0];
  if (y.size() < 2) throw Error(cat("channel_slice needs a channel axis, got ", shape_str(y)));
  if (a.begin < 0 || a.end <= a.begin || a.end > y[1])
    throw Error("", "begin",
                cat("channels [", a.begin, ", ", a.end, ") are not a nonempty range of ", y[1]));
  y[1] = a.end - a.begin;
  return y;
}

constexpr OpDef op_defs[] = {
    {.kind = OpKind::channel_slice, .name = "channel_slice", .attrs = attrs, .shape = shape}};

void check_forward(const StepCheck& c) { c.expect("y", c.forward(c.shape("x"))); }

template <class T> void forward(const StepArgs<T>& c) {
  cpu::channel_slice<T>(c.s.attrs.begin, c.in("x"), c.out("y"));
}

// channel_slice.backward: dy -> dx.
void check_backward(const StepCheck& c) { c.expect("dy", c.forward(c.shape("dx"))); }

template <class T> void backward(const StepArgs<T>& c) {
  cpu::channel_slice_backward<T>(c.s.attrs.begin, c.in("dy"), c.out("dx"), c.s.accumulate);
}

constexpr FnDef fn_defs[] = {{.fn = Fn::channel_slice_forward,
                              .name = "channel_slice.forward",
                              .signature = {roles::x, roles::y},
                              .check = check_forward,
                              .cpu_f32 = forward<float>,
                              .cpu_f64 = forward<double>},
                             {.fn = Fn::channel_slice_backward,
                              .name = "channel_slice.backward",
                              .signature = {roles::dy, roles::dx},
                              .check = check_backward,
                              .cpu_f32 = backward<float>,
                              .cpu_f64 = backward<double>}};

} // namespace

namespace ops {
OpFile channel_slice_file() { return {op_defs, fn_defs}; }
} // namespace ops

} // namespace kiln
