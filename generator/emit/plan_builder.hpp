// Assembles a plan: buffers and steps added in execution order, then `finish` frees each
// transient buffer right after its last use, lays the arena out from those lifetimes
// (schedules/memory_plan) and validates the result.
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

  Plan finish();

private:
  Plan plan_;
};

} // namespace kiln
