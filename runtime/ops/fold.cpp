// fold and unfold (FoldedCNNs): [N, C, H, W] -> [N/f, f*C, H, W] and [M, f*K] -> [M*f, K],
// views (no step computes them).
#include "runtime/error.hpp"
#include "runtime/ops/registry.hpp"
#include "runtime/ops/shape_rules.hpp"

namespace kiln {

namespace {

using namespace shape_rules;

constexpr AttrSpec attrs[] = {{"factor", AttrType::integer, true}};

Shape fold_shape(const Attrs& a, std::span<const Shape> in) {
  const Shape& x = in[0];
  need_rank(x, 4, "[N, C, H, W]");
  check_positive(a.factor, "factor", 1 << 12);
  if (x[0] % a.factor != 0)
    throw Error(cat("batch ", x[0], " is not a multiple of the fold factor ", a.factor));
  return {x[0] / a.factor, x[1] * a.factor, x[2], x[3]};
}

Shape unfold_shape(const Attrs& a, std::span<const Shape> in) {
  const Shape& x = in[0];
  check_positive(a.factor, "factor", 1 << 12);
  if (x.size() != 2 || x[1] % a.factor != 0)
    throw Error(cat("unfold needs [M, factor*K] with factor ", a.factor, ", got ", shape_str(x)));
  return {x[0] * a.factor, x[1] / a.factor};
}

constexpr OpDef op_defs[] = {
    {.kind = OpKind::fold, .name = "fold", .attrs = attrs, .view = true, .shape = fold_shape},
    {.kind = OpKind::unfold,
     .name = "unfold",
     .attrs = attrs,
     .view = true,
     .shape = unfold_shape}};

} // namespace

namespace ops {
OpFile fold_file() { return {op_defs, {}}; }
} // namespace ops

} // namespace kiln
