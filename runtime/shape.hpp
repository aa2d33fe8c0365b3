// Logical tensor shapes (NCHW for images, [N, F] for features).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kiln {

using Shape = std::vector<int64_t>;

inline int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

inline std::string shape_str(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

} // namespace kiln
