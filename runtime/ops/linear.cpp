// linear: the op and its functions (forward, backward_data, backward_weight, the split-K
// forward).
#include "runtime/cpu/step_args.hpp"
#include "runtime/error.hpp"
#include "runtime/ops/registry.hpp"
#include "runtime/ops/roles.hpp"
#include "runtime/ops/shape_rules.hpp"
#include "runtime/ops/split_k.hpp"
#include "runtime/ops/weighted.hpp"

namespace kiln {

namespace {

using namespace shape_rules;
using cpu::StepArgs;

constexpr AttrSpec attrs[] = {{"out_features", AttrType::integer, true},
                              {"bias", AttrType::boolean, false}};

Shape shape(const Attrs& a, std::span<const Shape> in) {
  const Shape& x = in[0];
  check_positive(a.out_features, "out_features");
  if (x.size() != 2)
    throw Error(cat("linear needs a 2-D input [N, features], got ", shape_str(x),
                    " (add a flatten layer before it)"));
  mul(x[1], a.out_features);
  return {x[0], a.out_features};
}

std::vector<ParamSpec> params(const Attrs& a, std::span<const Shape> in) {
  std::vector<ParamSpec> p{{"weight", {a.out_features, in[0][1]}, true}};
  if (a.bias) p.push_back({"bias", {a.out_features}, true});
  return p;
}

int64_t macs(const Attrs&, std::span<const Shape> in, const Shape& out) {
  return numel(out) * in[0][1];
}

int64_t thop_flops(const Attrs& a, std::span<const Shape> in, const Shape& y) {
  return 2 * macs(a, in, y);
}

constexpr OpDef op_defs[] = {{.kind = OpKind::linear,
                              .name = "linear",
                              .attrs = attrs,
                              .shape = shape,
                              .params = params,
                              .macs = macs,
                              .thop_flops = thop_flops,
                              .width = &Attrs::out_features}};

// linear.forward: x, w, [b], [xmap0, wmap: the TMA tensor maps a Hopper kernel reads,
// runtime/ops/tensor_map.cpp; the reference ignores them] -> y (the epilogue).
constexpr std::string_view fwd_in[] = {"x", "w", "b", "xmap0", "wmap"};
constexpr std::string_view fwd_optional[] = {"b", "xmap0", "wmap"};
constexpr RoleType fwd_types[] = {{"xmap0", ArgType::u8}, {"wmap", ArgType::u8}};
template <class T> void forward(const StepArgs<T>& c) {
  cpu::linear<T>(c.in("x"), c.in("w"), c.opt("b"), c.out("y"));
  cpu::epilogue(c);
}

template <class T> void backward_data(const StepArgs<T>& c) {
  cpu::linear_backward_data<T>(c.in("dy"), c.in("w"), c.out("dx"), c.s.accumulate);
}

template <class T> void backward_weight(const StepArgs<T>& c) {
  cpu::linear_backward_weight<T>(c.in("x"), c.in("dy"), c.out("dw"), c.s.accumulate);
}

// linear.forward_partial: x [N, F], w -> partial [S * N, K] (float), the ranges over f.
void check_forward_partial(const StepCheck& c) { check_split_k(c, false); }
template <class T> void forward_partial(const StepArgs<T>& c) { split_k_reference(c, false); }

// linear.forward_split: linear.forward with split-K completed inside its kernel (split_k.hpp);
// [xmap0, wmap]: a Hopper kernel's tensor maps, as linear.forward's.
constexpr std::string_view split_in[] = {"x", "w", "b", "tickets", "xmap0", "wmap"};
constexpr std::string_view split_out[] = {"y", "partial"};
constexpr std::string_view split_optional[] = {"b", "xmap0", "wmap"};
constexpr RoleType split_types[] = {
    {"tickets", ArgType::i32}, {"xmap0", ArgType::u8}, {"wmap", ArgType::u8}};
void check_forward_split(const StepCheck& c) { check_split_in_kernel(c, false); }

constexpr FnDef fn_defs[] = {
    {.fn = Fn::linear_forward,
     .name = "linear.forward",
     .signature = {fwd_in, roles::y, fwd_optional},
     .epilogue = true,
     .types = fwd_types,
     .check = check_weighted_forward,
     .cpu_f32 = forward<float>,
     .cpu_f64 = forward<double>,
     .per_image = roles::x_y,
     .shared = roles::weights_and_maps},
    {.fn = Fn::linear_backward_data,
     .name = "linear.backward_data",
     .signature = {roles::dy_w, roles::dx, {}},
     .check = check_backward_data,
     .cpu_f32 = backward_data<float>,
     .cpu_f64 = backward_data<double>},
    {.fn = Fn::linear_backward_weight,
     .name = "linear.backward_weight",
     .signature = {roles::x_dy, roles::dw, {}},
     .check = check_backward_weight,
     .cpu_f32 = backward_weight<float>,
     .cpu_f64 = backward_weight<double>},
    {.fn = Fn::linear_forward_partial,
     .name = "linear.forward_partial",
     .signature = {roles::x_w, roles::partial, {}},
     .check = check_forward_partial,
     .cpu_f32 = forward_partial<float>,
     .cpu_f64 = forward_partial<double>},
    {.fn = Fn::linear_forward_split,
     .name = "linear.forward_split",
     .signature = {split_in, split_out, split_optional},
     .epilogue = true,
     .types = split_types,
     .check = check_forward_split,
     .cpu_f32 = forward<float>,
     .cpu_f64 = forward<double>},
};

} // namespace

namespace ops {
OpFile linear_file() { return {op_defs, fn_defs}; }
} // namespace ops

} // namespace kiln
