// A name for a buffer a rewrite adds: `base`, or base#2, base#3, ... where the plan has it.
#pragma once

#include "runtime/plan.hpp"

#include <string>

namespace kiln {

inline std::string fresh_buffer_name(const Plan& p, const std::string& base) {
  std::string name = base;
  for (int k = 2; p.find_buffer(name) >= 0; ++k)
    name = base + "#" + std::to_string(k);
  return name;
}

} // namespace kiln
