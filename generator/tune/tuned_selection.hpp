// Selection informed by a tuning database: a step whose shape (op, arguments, dtype,
// layout; the database fixes the GPU identity) has a measured winner gets it; the others
// get the cost model with the per-family corrections fitted from the measurements.
#pragma once

#include "generator/select/hints.hpp"
#include "generator/tune/database.hpp"

#include <map>
#include <set>
#include <string>

namespace kiln {

class TunedSelection final : public SelectionHints {
public:
  // `layout`: the plan's activation layout (part of every key).
  TunedSelection(TuningDb db, Layout layout);

  std::string measured_winner(const StepInfo& s) const override;
  void winner_ignored(const StepInfo& s, const std::string& variant,
                      const std::string& why) const override;
  double correction(std::string_view family) const override;
  std::string measured_reason(const StepInfo& s, const std::string& variant) const override;

private:
  TuningDb db_;
  Layout layout_;
  std::map<std::string, const Measurement*> winners_;
  std::map<std::string, double, std::less<>> factors_;
  mutable std::set<std::string> warned_;
};

} // namespace kiln
