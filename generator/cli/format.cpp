#include "generator/cli/format.hpp"

#include <fmt/format.h>

namespace kiln::cli {

std::string human_bytes(int64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = double(bytes);
  int u = 0;
  while (v >= 1024 && u < 4)
    v /= 1024, ++u;
  return u == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.1f} {}", v, units[u]);
}

std::string human_count(int64_t n) {
  const char* units[] = {"", " K", " M", " G", " T"};
  double v = double(n);
  int u = 0;
  while (v >= 1000 && u < 4)
    v /= 1000, ++u;
  return u == 0 ? fmt::format("{}", n) : fmt::format("{:.2f}{}", v, units[u]);
}

std::string with_commas(int64_t n) {
  std::string s = std::to_string(n < 0 ? -n : n), r;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i && (s.size() - i) % 3 == 0) r += ',';
    r += s[i];
  }
  return (n < 0 ? "-" : "") + r;
}

} // namespace kiln::cli
