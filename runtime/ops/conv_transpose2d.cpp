// conv_transpose2d (PyTorch's ConvTranspose2d, ONNX ConvTranspose): y = the data gradient of
// the conv2d that maps y's shape to x's (runtime/ops/conv_transpose2d.hpp), plus the bias.
// Its function is conv_transpose2d.forward; its gradients are that conv's own functions
// (conv2d.forward for dx, conv2d.backward_weight for dw, bias.backward), which the lowering
// (generator/lower/ops/conv_transpose2d.cpp) emits with the conv's attributes.
#include "runtime/ops/conv_transpose2d.hpp"

#include "runtime/cpu/step_args.hpp"
#include "runtime/error.hpp"
#include "runtime/ops/registry.hpp"
#include "runtime/ops/roles.hpp"
#include "runtime/ops/shape_rules.hpp"
#include "runtime/ops/step_check.hpp"

namespace kiln {

Attrs transposed_conv(const Attrs& a, int64_t in_channels) {
  Attrs c;
  c.out_channels = in_channels;
  c.kernel = a.kernel;
  c.stride = a.stride;
  c.padding = a.padding;
  c.dilation = a.dilation;
  c.groups = a.groups;
  c.bias = false;
  return c;
}

namespace {

using namespace shape_rules;
using cpu::StepArgs;

constexpr AttrSpec attrs[] = {
    {"out_channels", AttrType::integer, true}, {"kernel", AttrType::int2, true},
    {"stride", AttrType::int2, false},         {"padding", AttrType::int2, false},
    {"output_padding", AttrType::int2, false}, {"dilation", AttrType::int2, false},
    {"groups", AttrType::integer, false},      {"bias", AttrType::boolean, false}};

Shape shape(const Attrs& a, std::span<const Shape> in) {
  const Shape& x = in[0];
  need_rank(x, 4, "[N, C, H, W]");
  check_positive(a.out_channels, "out_channels");
  check_positive(a.kernel, "kernel");
  check_positive(a.stride, "stride");
  check_positive(a.dilation, "dilation");
  check_padding(a);
  if (a.padding_end != Int2{-1, -1}) throw Error("", "padding_end", "conv_transpose2d has none");
  check_positive(a.groups, "groups");
  if (x[1] % a.groups != 0)
    throw Error(cat("input channels ", x[1], " are not divisible by groups ", a.groups));
  if (a.out_channels % a.groups != 0)
    throw Error(cat("out_channels ", a.out_channels, " is not divisible by groups ", a.groups));
  Shape y{x[0], a.out_channels, 0, 0};
  for (int i = 0; i < 2; ++i) {
    // Rows past the last window's reach: fewer than a stride (as the conv it transposes
    // maps them to no new output row).
    if (a.output_padding[i] < 0 || a.output_padding[i] >= a.stride[i])
      throw Error("", "output_padding",
                  cat("must be in [0, stride ", a.stride[i], "), got ", a.output_padding[i]));
    y[size_t(2 + i)] = (x[size_t(2 + i)] - 1) * a.stride[i] - 2 * a.padding[i] +
                       a.dilation[i] * (a.kernel[i] - 1) + a.output_padding[i] + 1;
    if (y[size_t(2 + i)] < 1)
      throw Error(cat("conv_transpose2d: the padding leaves an empty output (", y[size_t(2 + i)],
                      " ", i == 0 ? "rows" : "columns", ")"));
  }
  mul(mul(y[0], y[1]), mul(y[2], y[3]));
  return y;
}

std::vector<ParamSpec> params(const Attrs& a, std::span<const Shape> in) {
  std::vector<ParamSpec> p{
      {"weight", {in[0][1], a.out_channels / a.groups, a.kernel[0], a.kernel[1]}, true}};
  if (a.bias) p.push_back({"bias", {a.out_channels}, true});
  return p;
}

int64_t macs(const Attrs& a, std::span<const Shape> in, const Shape&) {
  return numel(in[0]) * (a.out_channels / a.groups) * a.kernel[0] * a.kernel[1];
}

int64_t thop_flops(const Attrs& a, std::span<const Shape> in, const Shape& y) {
  return 2 * macs(a, in, y) + (a.bias ? numel(y) : 0);
}

constexpr OpDef op_defs[] = {{.kind = OpKind::conv_transpose2d,
                              .name = "conv_transpose2d",
                              .attrs = attrs,
                              .shape = shape,
                              .params = params,
                              .macs = macs,
                              .thop_flops = thop_flops,
                              .width = &Attrs::out_channels}};

// conv_transpose2d.forward: x, w, [b] -> y.
constexpr std::string_view fwd_optional[] = {"b"};

void check_forward(const StepCheck& c) {
  const Shape y = c.forward(c.shape("x"));
  c.expect("y", y);
  c.expect("w", c.param(c.shape("x"), "weight").shape);
  if (c.has("b")) c.expect("b", {y[1]});
}

template <class T> void forward(const StepArgs<T>& c) {
  const Attrs conv = transposed_conv(c.s.attrs, c.shape("x")[1]);
  cpu::View<T> y = c.out("y");
  cpu::conv2d_backward_data<T>(conv, c.in("x"), c.in("w"), y, false);
  if (const T* b = c.opt("b")) {
    const int64_t N = y.shape[0], O = y.shape[1], S = y.shape[2] * y.shape[3];
    for (int64_t n = 0; n < N; ++n)
      for (int64_t o = 0; o < O; ++o)
        for (int64_t i = 0; i < S; ++i)
          y.data[(n * O + o) * S + i] = T(double(y.data[(n * O + o) * S + i]) + double(b[o]));
  }
}

constexpr FnDef fn_defs[] = {
    {.fn = Fn::conv_transpose2d_forward,
     .name = "conv_transpose2d.forward",
     .signature = {roles::x_w_b, roles::y, fwd_optional},
     .check = check_forward,
     .cpu_f32 = forward<float>,
     .cpu_f64 = forward<double>},
};

} // namespace

namespace ops {
OpFile conv_transpose2d_file() { return {op_defs, fn_defs}; }
} // namespace ops

} // namespace kiln
