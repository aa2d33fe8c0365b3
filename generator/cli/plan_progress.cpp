#include "generator/cli/plan_progress.hpp"

#include <fmt/format.h>

namespace kiln::cli {

PlanProgress::PlanProgress(const Plan& plan) {
  for (const Phase& p : plan.phases)
    total_ += p.steps.size();
}

std::function<void(const Phase&, size_t)> PlanProgress::callback() {
  if (!line_.active()) return {};
  return [this](const Phase& phase, size_t i) {
    ++seen_;
    line_.draw([&] {
      const std::string& node = phase.steps[i].node;
      return fmt::format("{} {}/{} {}", phase.name, seen_, total_,
                         node.size() > 40 ? node.substr(0, 37) + "..." : node);
    });
  };
}

} // namespace kiln::cli
