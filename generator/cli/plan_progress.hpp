// The progress line of a long plan execution (kiln run, kiln profile): the phase, the steps
// done of all the plan's, the step's node; shown after half a second.
#pragma once

#include "runtime/executor.hpp"
#include "runtime/progress.hpp"

#include <functional>

namespace kiln::cli {

class PlanProgress {
public:
  explicit PlanProgress(const Plan& plan);
  // For ExecutorOptions::on_step; empty when stderr is not a terminal.
  std::function<void(const Phase&, size_t)> callback();
  void done() { line_.clear(); }

private:
  size_t total_ = 0, seen_ = 0;
  ProgressLine line_{ProgressLine::stderr_is_terminal(), std::chrono::milliseconds(500)};
};

} // namespace kiln::cli
