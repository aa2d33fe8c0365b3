// A rewrite decision's time as the manifest lists it: microseconds to the nanosecond, null
// where no kernel served the alternative (an infinite estimate).
#pragma once

#include <cmath>
#include <nlohmann/json.hpp>

namespace kiln {

inline nlohmann::ordered_json us_json(double us) {
  return std::isfinite(us) ? nlohmann::ordered_json(std::round(us * 1000) / 1000)
                           : nlohmann::ordered_json();
}

} // namespace kiln
