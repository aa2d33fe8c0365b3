// concat (channel axis): the op and its functions. A wide concat is lowered to several
// concat.forward steps, each filling a slice of y's channels (ChannelSlice); concat.backward
// takes one input's slice of dy.
#include "runtime/cpu/step_args.hpp"
#include "runtime/error.hpp"
#include "runtime/ops/registry.hpp"
#include "runtime/ops/roles.hpp"
#include "runtime/ops/step_check.hpp"

#include <algorithm>

namespace kiln {

namespace {

using cpu::CView, cpu::StepArgs, cpu::View;

Shape shape(const Attrs&, std::span<const Shape> in) {
  const Shape& x = in[0];
  if (x.size() < 2) throw Error(cat("concat needs inputs with a channel axis, got ", shape_str(x)));
  Shape y = x;
  for (size_t i = 1; i < in.size(); ++i) {
    const Shape& s = in[i];
    bool ok = s.size() == x.size() && s[0] == x[0];
    for (size_t d = 2; ok && d < s.size(); ++d)
      ok = s[d] == x[d];
    if (!ok)
      throw Error(cat("concat inputs must agree except in channels: input 0 is ", shape_str(x),
                      ", input ", i, " is ", shape_str(s)));
    y[1] += s[1];
  }
  return y;
}

constexpr OpDef op_defs[] = {
    {.kind = OpKind::concat, .name = "concat", .arity = {2, true}, .shape = shape}};

// concat.forward: x0, x1, ... -> y: the inputs fill y's channels [offset, offset + sum).
void check_forward(const StepCheck& c) {
  const std::vector<Shape> xs = c.inputs();
  if (xs.empty()) c.fail("needs at least one input x0");
  const Shape part = xs.size() == 1 ? xs[0] : c.forward(xs);
  const Shape& y = c.shape("y");
  const int64_t at = c.s.channel_slice().offset;
  bool ok = y.size() == part.size() && at >= 0 && at + part[1] <= y[1];
  for (size_t d = 0; ok && d < y.size(); ++d)
    ok = d == 1 || y[d] == part[d];
  if (!ok)
    c.fail(
        cat("inputs ", shape_str(part), " at channel offset ", at, " do not fit y ", shape_str(y)));
}

template <class T> void forward(const StepArgs<T>& c) {
  const auto xs = c.inputs();
  View<T> y = c.out("y");
  int64_t channels = 0;
  for (const CView<T>& x : xs)
    channels += x.shape[1];
  int64_t at = c.s.channel_slice().offset;
  if (at == 0 && channels == y.shape[1]) return cpu::concat<T>(xs, y);
  // A slice of a wide concat: the inputs' channels at the offset.
  const int64_t n = y.shape[0], inner = numel(y.shape) / (n * y.shape[1]);
  for (const CView<T>& x : xs) {
    const int64_t cx = x.shape[1];
    for (int64_t b = 0; b < n; ++b)
      std::copy_n(x.data + b * cx * inner, cx * inner, y.data + (b * y.shape[1] + at) * inner);
    at += cx;
  }
}

// concat.backward: dy -> dx, the channel slice of dy at the offset.
void check_backward(const StepCheck& c) {
  const Shape& dy = c.shape("dy");
  const Shape& dx = c.shape("dx");
  const int64_t at = c.s.channel_slice().offset;
  bool ok =
      dy.size() == dx.size() && dy.size() >= 2 && at >= 0 && at + dx[1] <= dy[1] && dy[0] == dx[0];
  for (size_t d = 2; ok && d < dy.size(); ++d)
    ok = dy[d] == dx[d];
  if (!ok)
    c.fail(cat("dx ", shape_str(dx), " at channel offset ", at, " is not a slice of dy ",
               shape_str(dy)));
}

template <class T> void backward(const StepArgs<T>& c) {
  cpu::concat_backward<T>(c.in("dy"), c.s.channel_slice().offset, c.out("dx"), c.s.accumulate);
}

constexpr FnDef fn_defs[] = {
    {.fn = Fn::concat_forward,
     .name = "concat.forward",
     .signature = {roles::xs, roles::y, {}},
     .params = params_index<ChannelSlice>(),
     .params_optional = true,
     .writes_part = true,
     .check = check_forward,
     .cpu_f32 = forward<float>,
     .cpu_f64 = forward<double>},
    {.fn = Fn::concat_backward,
     .name = "concat.backward",
     .signature = {roles::dy, roles::dx, {}},
     .params = params_index<ChannelSlice>(),
     .check = check_backward,
     .cpu_f32 = backward<float>,
     .cpu_f64 = backward<double>},
};

} // namespace

namespace ops {
OpFile concat_file() { return {op_defs, fn_defs}; }
} // namespace ops

} // namespace kiln
