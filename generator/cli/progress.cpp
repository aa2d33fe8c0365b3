#include "generator/cli/progress.hpp"

#include "generator/cli/format.hpp"

#include <fmt/format.h>

namespace kiln::cli {

Progress::Progress(const Plan& plan) : active_(stderr_is_terminal()) {
  for (const Phase& p : plan.phases)
    total_ += p.steps.size();
  start_ = last_ = std::chrono::steady_clock::now();
}

std::function<void(const Phase&, size_t)> Progress::callback() {
  if (!active_) return {};
  return [this](const Phase& phase, size_t i) {
    ++seen_;
    const auto now = std::chrono::steady_clock::now();
    if (now - last_ < std::chrono::milliseconds(100) ||
        now - start_ < std::chrono::milliseconds(500))
      return;
    last_ = now;
    const Step& s = phase.steps[i];
    std::string what = s.node.size() > 40 ? s.node.substr(0, 37) + "..." : s.node;
    fmt::print(stderr, "\r\033[K{} {}/{} {}", phase.name, seen_, total_, what);
    drawn_ = true;
  };
}

void Progress::done() {
  if (drawn_) fmt::print(stderr, "\r\033[K");
  drawn_ = false;
}

} // namespace kiln::cli
