// The error every strategy throws when its schedules cannot fit a memory budget. It carries
// the smallest budget at which the same call succeeds, so callers can say what would work.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace kiln::sched {

struct Infeasible : std::runtime_error {
  Infeasible(const std::string& what, int64_t min_feasible)
      : std::runtime_error(what), min_feasible_bytes(min_feasible) {}
  int64_t min_feasible_bytes;
};

} // namespace kiln::sched
