// flatten: [N, ...] -> [N, prod(...)], a view (no step computes it).
#include "runtime/error.hpp"
#include "runtime/ops/registry.hpp"
#include "runtime/ops/shape_rules.hpp"

namespace kiln {

namespace {

Shape shape(const Attrs&, std::span<const Shape> in) {
  const Shape& x = in[0];
  if (x.size() < 2) throw Error(cat("flatten needs at least 2 dimensions, got ", shape_str(x)));
  int64_t f = 1;
  for (size_t d = 1; d < x.size(); ++d)
    f = shape_rules::mul(f, x[d]);
  return {x[0], f};
}

constexpr OpDef op_defs[] = {
    {.kind = OpKind::flatten, .name = "flatten", .view = true, .shape = shape, .rowwise = true}};

} // namespace

namespace ops {
OpFile flatten_file() { return {op_defs, {}}; }
} // namespace ops

} // namespace kiln
