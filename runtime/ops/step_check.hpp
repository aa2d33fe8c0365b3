// What a function's shape check (FnDef::check) sees of its step: the argument shapes, the
// node's shape rule and parameters, and a failure that names the step.
#pragma once

#include "runtime/plan.hpp"

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

struct StepCheck {
  const Plan& p;
  const Step& s;
  std::string where;

  const Shape& shape(std::string_view role) const { return p.buffers[s.need(role)].shape; }
  bool has(std::string_view role) const { return s.arg(role) >= 0; }
  [[noreturn]] void fail(const std::string& what) const;
  void same(std::string_view a, std::string_view b) const;     // equal shapes
  void expect(std::string_view role, const Shape& want) const; // role's shape is `want`
  Shape forward(const Shape& x) const;                         // the op's output for x
  Shape forward(std::span<const Shape> xs) const;              // ... for several inputs
  // Another op's output for x (a fused pool's); failures start with `what`.
  Shape forward_as(OpKind op, const Attrs& a, const Shape& x, std::string_view what) const;
  ParamSpec param(const Shape& x, std::string_view suffix) const; // the op's parameter for x
  Shape channels(std::string_view role) const;                    // {C} of role's [N, C, ...]
  std::vector<Shape> inputs() const;                              // x0, x1, ... shapes
  // An optimizer's hyperparameter: finite, in [lo, hi].
  void hyper(double v, std::string_view name, double lo, double hi) const;
  // Partial sums are written once (partial.sum may accumulate what it completes).
  void not_accumulated() const;
};

} // namespace kiln
