#include "generator/schedule/budget.hpp"

#include "runtime/error.hpp"

#include <cmath>
#include <cstdlib>

namespace kiln {

int64_t parse_budget(const std::string& text, int64_t reference) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  const std::string unit(end ? end : "");
  auto bad = [&] {
    return Error("", "--budget", cat("expected bytes (123456), a size (700MiB, 12GiB, 1.5GB) or a fraction of the "
                                     "store-all peak (40%), got \"", text, "\""));
  };
  if (end == text.c_str() || !std::isfinite(v) || v < 0) throw bad();
  double scale = 1;
  if (unit.empty() || unit == "B") scale = 1;
  else if (unit == "%") scale = double(reference) / 100.0;
  else if (unit == "KiB") scale = 1024.0;
  else if (unit == "MiB") scale = 1024.0 * 1024;
  else if (unit == "GiB") scale = 1024.0 * 1024 * 1024;
  else if (unit == "KB" || unit == "kB") scale = 1e3;
  else if (unit == "MB") scale = 1e6;
  else if (unit == "GB") scale = 1e9;
  else throw bad();
  const double bytes = v * scale;
  if (bytes > 9e18) throw bad();
  return int64_t(std::llround(bytes));
}

} // namespace kiln
