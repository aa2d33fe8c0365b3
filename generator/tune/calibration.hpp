// Per-family corrections of the cost model fitted from measured times: a family's factor is
// the geometric median of measured / predicted over its timed variants (robust to a few
// odd shapes). The prediction error of a variant is max(measured/predicted,
// predicted/measured) >= 1; kiln tune and kiln tune report give its median and worst per
// family, before and after the correction.
#pragma once

#include "generator/tune/database.hpp"

#include <map>
#include <string>
#include <vector>

namespace kiln {

struct FamilyFit {
  std::string family;
  int samples = 0;
  double factor = 1;                          // measured / predicted, typically
  double before_median = 1, before_worst = 1; // error ratios of the raw cost model
  double after_median = 1, after_worst = 1;   // with the factor applied
};

// Families in name order; only timed measurements with a prediction count.
std::vector<FamilyFit> fit_families(const TuningDb& db);

std::map<std::string, double> correction_factors(const std::vector<FamilyFit>& fits);

} // namespace kiln
