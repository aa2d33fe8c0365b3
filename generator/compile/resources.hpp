// What ptxas reports about a compiled kernel (`-v`): the numbers occupancy depends on.
#pragma once

#include <string>
#include <string_view>

namespace kiln {

struct Resources {
  int registers = 0;
  int spill_stores = 0; // bytes
  int spill_loads = 0;  // bytes
  int stack_bytes = 0;
  int shared_bytes = 0; // static shared memory
  bool found = false;   // the log had a report for the entry
};

// Parses the ptxas verbose report for `entry` out of a compiler log.
Resources parse_ptxas_report(std::string_view log, std::string_view entry);

} // namespace kiln
