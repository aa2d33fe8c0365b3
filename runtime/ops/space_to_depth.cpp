// space_to_depth (ONNX SpaceToDepth, padded and sized): the op and its functions (forward;
// backward gathers each dx element from the one dy element it went to).
#include "runtime/cpu/step_args.hpp"
#include "runtime/error.hpp"
#include "runtime/ops/registry.hpp"
#include "runtime/ops/roles.hpp"
#include "runtime/ops/shape_rules.hpp"
#include "runtime/ops/step_check.hpp"

namespace kiln {

namespace {

using namespace shape_rules;
using cpu::StepArgs;

// factor: the block size S; padding: [top, left] zeros before x; size: the output's [OH, OW]
// (0: what covers x and its padding); out_channels: 0 for S*S*C, more adds zero channels
// (a conv reading the result may want a channel count its kernels prefer).
constexpr AttrSpec attrs[] = {{"factor", AttrType::integer, true},
                              {"padding", AttrType::int2, false},
                              {"size", AttrType::int2, false},
                              {"out_channels", AttrType::integer, false}};

Shape shape(const Attrs& a, std::span<const Shape> in) {
  const Shape& x = in[0];
  need_rank(x, 4, "[N, C, H, W]");
  check_positive(a.factor, "factor", 1 << 12);
  check_padding(a);
  const int64_t S = a.factor, blocks = mul(mul(S, S), x[1]);
  Shape y{x[0], blocks, 0, 0};
  for (int i = 0; i < 2; ++i) {
    if (a.size[size_t(i)] < 0) throw Error("", "size", "must not be negative");
    if (a.size[size_t(i)] > (1 << 16)) throw Error("", "size", "is absurdly large");
    y[size_t(2 + i)] = a.size[size_t(i)] > 0
                           ? a.size[size_t(i)]
                           : (x[size_t(2 + i)] + a.padding[size_t(i)] + S - 1) / S;
  }
  if (a.out_channels < 0) throw Error("", "out_channels", "must not be negative");
  if (a.out_channels > 0) {
    if (a.out_channels < blocks)
      throw Error("", "out_channels",
                  cat("is ", a.out_channels, ", below factor^2 * C = ", blocks));
    check_positive(a.out_channels, "out_channels");
    y[1] = a.out_channels;
  }
  mul(mul(y[0], y[1]), mul(y[2], y[3]));
  return y;
}

constexpr OpDef op_defs[] = {
    {.kind = OpKind::space_to_depth, .name = "space_to_depth", .attrs = attrs, .shape = shape}};

void check_forward(const StepCheck& c) { c.expect("y", c.forward(c.shape("x"))); }

template <class T> void forward(const StepArgs<T>& c) {
  cpu::space_to_depth<T>(c.s.attrs, c.in("x"), c.out("y"));
}

void check_backward(const StepCheck& c) { c.expect("dy", c.forward(c.shape("dx"))); }

template <class T> void backward(const StepArgs<T>& c) {
  cpu::space_to_depth_backward<T>(c.s.attrs, c.in("dy"), c.out("dx"), c.s.accumulate);
}

// Each image of y comes from the same image of x alone (also where the op rearranges conv
// weights, whose "images" are the filters).
constexpr FnDef fn_defs[] = {
    {.fn = Fn::space_to_depth_forward,
     .name = "space_to_depth.forward",
     .signature = {roles::x, roles::y, {}},
     .check = check_forward,
     .cpu_f32 = forward<float>,
     .cpu_f64 = forward<double>,
     .per_image = roles::x_y},
    {.fn = Fn::space_to_depth_backward,
     .name = "space_to_depth.backward",
     .signature = {roles::dy, roles::dx, {}},
     .check = check_backward,
     .cpu_f32 = backward<float>,
     .cpu_f64 = backward<double>,
     .per_image = roles::dy_dx},
};

} // namespace

namespace ops {
OpFile space_to_depth_file() { return {op_defs, fn_defs}; }
} // namespace ops

} // namespace kiln
