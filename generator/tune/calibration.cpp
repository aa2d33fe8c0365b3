#include "generator/tune/calibration.hpp"

#include <algorithm>
#include <cmath>

namespace kiln {

namespace {

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double error_ratio(double measured, double predicted) {
  return std::max(measured / predicted, predicted / measured);
}

} // namespace

std::vector<FamilyFit> fit_families(const TuningDb& db) {
  std::map<std::string, std::vector<std::pair<double, double>>>
      by_family; // (measured, predicted) us
  for (const Measurement& m : db.measurements)
    if (m.median_ms && m.predicted_us > 0 && std::isfinite(m.predicted_us))
      by_family[m.family].push_back({*m.median_ms * 1000, m.predicted_us});
  std::vector<FamilyFit> fits;
  for (const auto& [family, samples] : by_family) {
    FamilyFit f;
    f.family = family;
    f.samples = int(samples.size());
    std::vector<double> logs, before, after;
    for (auto [meas, pred] : samples)
      logs.push_back(std::log(meas / pred));
    f.factor = std::exp(median_of(logs));
    for (auto [meas, pred] : samples) {
      before.push_back(error_ratio(meas, pred));
      after.push_back(error_ratio(meas, pred * f.factor));
    }
    f.before_median = median_of(before);
    f.before_worst = *std::max_element(before.begin(), before.end());
    f.after_median = median_of(after);
    f.after_worst = *std::max_element(after.begin(), after.end());
    fits.push_back(f);
  }
  return fits;
}

std::map<std::string, double> correction_factors(const std::vector<FamilyFit>& fits) {
  std::map<std::string, double> r;
  for (const FamilyFit& f : fits)
    r[f.family] = f.factor;
  return r;
}

} // namespace kiln
