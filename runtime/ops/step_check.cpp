#include "runtime/ops/step_check.hpp"

#include "runtime/error.hpp"

namespace kiln {

namespace {
std::string message(const Error& e) {
  return e.where().empty() ? e.message() : e.where() + " " + e.message();
}
} // namespace

void StepCheck::fail(const std::string& what) const { throw Error("", where, what); }

void StepCheck::same(std::string_view a, std::string_view b) const {
  if (shape(a) != shape(b))
    fail(cat("\"", a, "\" ", shape_str(shape(a)), " and \"", b, "\" ", shape_str(shape(b)),
             " must have the same shape"));
}

void StepCheck::expect(std::string_view role, const Shape& want) const {
  if (shape(role) != want)
    fail(cat("\"", role, "\" has shape ", shape_str(shape(role)), ", expected ", shape_str(want)));
}

Shape StepCheck::forward(const Shape& x) const { return forward(std::span<const Shape>(&x, 1)); }

Shape StepCheck::forward(std::span<const Shape> xs) const {
  try {
    return infer_shape(s.op, s.attrs, xs);
  } catch (const Error& e) {
    fail(message(e));
  }
}

Shape StepCheck::forward_as(OpKind op, const Attrs& a, const Shape& x,
                            std::string_view what) const {
  try {
    return infer_shape(op, a, std::span<const Shape>(&x, 1));
  } catch (const Error& e) {
    fail(cat(what, ": ", message(e)));
  }
}

ParamSpec StepCheck::param(const Shape& x, std::string_view suffix) const {
  for (const ParamSpec& ps : op_params(s.op, s.attrs, std::span<const Shape>(&x, 1)))
    if (ps.suffix == suffix) return ps;
  fail(cat(op_name(s.op), " has no parameter \"", suffix, "\""));
}

Shape StepCheck::channels(std::string_view role) const {
  const Shape& x = shape(role);
  if (x.size() < 2) fail(cat("\"", role, "\" needs a channel axis"));
  return {x[1]};
}

std::vector<Shape> StepCheck::inputs() const {
  std::vector<Shape> xs;
  for (int b : s.variadic('x'))
    xs.push_back(p.buffers[b].shape);
  return xs;
}

void StepCheck::hyper(double v, std::string_view name, double lo, double hi) const {
  if (!(v >= lo && v <= hi)) fail(cat(name, " must be in [", lo, ", ", hi, "], got ", v));
}

void StepCheck::not_accumulated() const {
  if (s.accumulate) fail("partial sums are written, not accumulated (partial.sum may)");
}

} // namespace kiln
