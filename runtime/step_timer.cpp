#include "runtime/step_timer.hpp"

#include <algorithm>

namespace kiln {

double StepTimes::median() const {
  if (ms.empty()) return 0;
  std::vector<double> v = ms;
  std::nth_element(v.begin(), v.begin() + std::ptrdiff_t(v.size() / 2), v.end());
  return v[v.size() / 2];
}

double StepTimes::min() const { return ms.empty() ? 0 : *std::min_element(ms.begin(), ms.end()); }
double StepTimes::max() const { return ms.empty() ? 0 : *std::max_element(ms.begin(), ms.end()); }

StepTimes time_steps(Backend& backend, int warmup, int runs, const std::function<void()>& step) {
  for (int i = 0; i < warmup; ++i)
    step();
  backend.synchronize();
  StepTimes t;
  for (int i = 0; i < runs; ++i)
    t.ms.push_back(backend.time_ms(step));
  return t;
}

} // namespace kiln
