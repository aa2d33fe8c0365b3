// Times repeated steps on a backend after warm-up runs: the device's own clock where it has
// one (CUDA events on the cuda backend's stream), else the host's around a synchronized body.
#pragma once

#include "runtime/backend.hpp"

#include <functional>
#include <vector>

namespace kiln {

struct StepTimes {
  std::vector<double> ms; // one per timed run, in run order
  double median() const;
  double min() const;
  double max() const;
};

StepTimes time_steps(Backend& backend, int warmup, int runs, const std::function<void()>& step);

} // namespace kiln
