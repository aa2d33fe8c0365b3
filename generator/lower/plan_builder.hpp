// Assembles a plan: buffers and steps added in execution order. `finish_plan` then drops
// unused buffers, frees each transient buffer right after its last use, lays the arena out
// from those lifetimes (schedules/memory_plan) and validates the result; passes (fusion,
// layouts, kernel choice) run on the unfinished plan in between.
#pragma once

#include "runtime/plan.hpp"

#include <string>

namespace kiln {

class PlanBuilder {
public:
  explicit PlanBuilder(Plan header);

  int buffer(const std::string& name, const Shape& shape, BufferRole role, DType dtype);
  int buffer(const std::string& name, const Shape& shape, BufferRole role); // plan dtype
  int view(const std::string& name, const Shape& shape, int of);
  int find(const std::string& name) const { return plan_.find_buffer(name); }
  Buffer& at(int b) { return plan_.buffers[b]; }
  Plan& plan() { return plan_; }

  void phase(const std::string& name); // subsequent steps go here
  Step& step(Step s);

  Plan take() { return std::move(plan_); }
  Plan finish();

private:
  Plan plan_;
};

Plan finish_plan(Plan p);

// Buffer uses: for each buffer (views resolved to their base when `by_base`), the
// (phase, step) pairs that name it, in order.
struct Use {
  size_t phase, step;
  std::string role;
};
std::vector<std::vector<Use>> buffer_uses(const Plan& p, bool by_base);

} // namespace kiln
