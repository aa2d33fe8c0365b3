// What a simulator reports about a schedule: valid or not (and why), peak memory, time.
#pragma once

#include <cstdint>
#include <string>

namespace kiln::sched {

struct SimResult {
  bool ok = false;
  std::string error;      // the first violated rule, naming the op index; empty when ok
  int64_t peak_bytes = 0; // max over ops of the memory during the op
  double time = 0;        // sum of the compute times of the ops
};

} // namespace kiln::sched
