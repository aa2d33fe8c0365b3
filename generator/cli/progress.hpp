// Progress of a long plan execution on a terminal: one line on stderr, redrawn at most
// ten times a second; silent when stderr is not a terminal.
#pragma once

#include "runtime/executor.hpp"

#include <chrono>

namespace kiln::cli {

class Progress {
public:
  explicit Progress(const Plan& plan);
  std::function<void(const Phase&, size_t)> callback();
  void done();

private:
  size_t total_ = 0, seen_ = 0;
  bool active_ = false, drawn_ = false;
  std::chrono::steady_clock::time_point start_, last_;
};

} // namespace kiln::cli
