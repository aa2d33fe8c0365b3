// The op functions of op.hpp over the registry (runtime/ops/): each op's rules are in its
// file there.
#include "runtime/op.hpp"

#include "runtime/error.hpp"
#include "runtime/ops/registry.hpp"

namespace kiln {

std::string_view op_name(OpKind op) { return op_def(op).name; }

std::optional<OpKind> parse_op(std::string_view name) {
  if (name == "upsample2d") return OpKind::resize; // the earlier name (runtime/ops/resize.cpp)
  for (OpKind op : all_ops)
    if (op_name(op) == name) return op;
  return std::nullopt;
}

std::span<const AttrSpec> op_attr_specs(OpKind op) { return op_def(op).attrs; }

Arity op_arity(OpKind op) { return op_def(op).arity; }

bool op_is_view(OpKind op) { return op_def(op).view; }

int64_t window_out(int64_t in, int64_t k, int64_t s, int64_t p, int64_t p_end, int64_t d,
                   bool ceil_mode) {
  const int64_t span = in + p + p_end - d * (k - 1) - 1;
  if (span < 0) return 0;
  int64_t out = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
  // PyTorch: the last window must start inside the input or its left padding.
  if (ceil_mode && (out - 1) * s >= in + p) --out;
  return out;
}

Shape infer_shape(OpKind op, const Attrs& a, std::span<const Shape> in) {
  const OpDef& d = op_def(op);
  const Arity ar = d.arity;
  if (int(in.size()) < ar.min || (!ar.variadic && int(in.size()) != ar.min))
    throw Error(cat(d.name, " takes ", ar.variadic ? "at least " : "", ar.min, " input",
                    ar.min > 1 ? "s" : "", ", got ", in.size()));
  for (const Shape& s : in)
    for (int64_t n : s)
      if (n <= 0) throw Error(cat("input shape ", shape_str(s), " has an empty dimension"));
  return d.shape(a, in);
}

std::vector<ParamSpec> op_params(OpKind op, const Attrs& a, std::span<const Shape> in) {
  const OpDef& d = op_def(op);
  return d.params ? d.params(a, in) : std::vector<ParamSpec>{};
}

int64_t op_macs(OpKind op, const Attrs& a, std::span<const Shape> in, const Shape& out) {
  const OpDef& d = op_def(op);
  return d.macs ? d.macs(a, in, out) : 0;
}

} // namespace kiln
