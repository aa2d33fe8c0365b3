// pad (constant, reflect or edge over H, W; ONNX Pad, PyTorch's F.pad): the op and its
// functions (forward; backward adds each dy element into its source).
#include "runtime/cpu/step_args.hpp"
#include "runtime/error.hpp"
#include "runtime/ops/registry.hpp"
#include "runtime/ops/roles.hpp"
#include "runtime/ops/shape_rules.hpp"
#include "runtime/ops/step_check.hpp"

#include <cmath>

namespace kiln {

namespace {

using namespace shape_rules;
using cpu::StepArgs;

// In the order of PadMode (runtime/op.hpp).
constexpr std::string_view modes[] = {"constant", "reflect", "edge"};

// padding: [top, left]; padding_end: [bottom, right] (absent: as padding).
constexpr AttrSpec attrs[] = {{"padding", AttrType::int2, false},
                              {"padding_end", AttrType::int2, false},
                              {"mode", AttrType::choice, false, modes},
                              {"value", AttrType::number, false}};

Shape shape(const Attrs& a, std::span<const Shape> in) {
  const Shape& x = in[0];
  need_rank(x, 4, "[N, C, H, W]");
  check_padding(a);
  if (a.mode < 0 || a.mode >= int64_t(std::size(modes))) throw Error("pad: mode out of range");
  if (!std::isfinite(a.value)) throw Error("", "value", "must be finite");
  const Int2 end = padding_end(a);
  for (int i = 0; i < 2; ++i)
    if (PadMode(a.mode) == PadMode::reflect &&
        (a.padding[i] >= x[size_t(2 + i)] || end[i] >= x[size_t(2 + i)]))
      throw Error(
          "", "padding",
          cat("reflect padding must be smaller than the input's extent ", x[size_t(2 + i)]));
  const Shape y{x[0], x[1], x[2] + a.padding[0] + end[0], x[3] + a.padding[1] + end[1]};
  mul(mul(y[0], y[1]), mul(y[2], y[3]));
  return y;
}

constexpr OpDef op_defs[] = {{.kind = OpKind::pad, .name = "pad", .attrs = attrs, .shape = shape}};

void check_forward(const StepCheck& c) { c.expect("y", c.forward(c.shape("x"))); }

template <class T> void forward(const StepArgs<T>& c) {
  cpu::pad<T>(c.s.attrs, c.in("x"), c.out("y"));
}

void check_backward(const StepCheck& c) { c.expect("dy", c.forward(c.shape("dx"))); }

template <class T> void backward(const StepArgs<T>& c) {
  cpu::pad_backward<T>(c.s.attrs, c.in("dy"), c.out("dx"), c.s.accumulate);
}

constexpr FnDef fn_defs[] = {
    {.fn = Fn::pad_forward,
     .name = "pad.forward",
     .signature = {roles::x, roles::y, {}},
     .check = check_forward,
     .cpu_f32 = forward<float>,
     .cpu_f64 = forward<double>},
    {.fn = Fn::pad_backward,
     .name = "pad.backward",
     .signature = {roles::dy, roles::dx, {}},
     .check = check_backward,
     .cpu_f32 = backward<float>,
     .cpu_f64 = backward<double>},
};

} // namespace

namespace ops {
OpFile pad_file() { return {op_defs, fn_defs}; }
} // namespace ops

} // namespace kiln
