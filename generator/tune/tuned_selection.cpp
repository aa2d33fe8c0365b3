#include "generator/tune/tuned_selection.hpp"

#include "generator/tune/calibration.hpp"
#include "generator/tune/key.hpp"

#include <fmt/format.h>

namespace kiln {

TunedSelection::TunedSelection(TuningDb db, Layout layout)
    : db_(std::move(db)), layout_(layout), winners_(db_.winners()) {
  for (const auto& [family, factor] : correction_factors(fit_families(db_)))
    factors_.emplace(family, factor);
}

std::string TunedSelection::measured_winner(const StepInfo& s) const {
  if (!tunable(s.step.fn)) return "";
  const auto it = winners_.find(tune_key(s.plan, s.step, layout_).id);
  return it == winners_.end() ? "" : it->second->variant;
}

void TunedSelection::winner_ignored(const StepInfo& s, const std::string& variant,
                                    const std::string& why) const {
  const std::string key = tune_key(s.plan, s.step, layout_).id;
  if (!warned_.insert(key + "\n" + variant).second) return;
  fmt::print(stderr,
             "kiln: warning: tuning database: the measured winner {} for {} is ignored: {}; "
             "the cost model decides\n",
             variant, s.step.node, why);
}

double TunedSelection::correction(std::string_view family) const {
  const auto it = factors_.find(family);
  return it == factors_.end() ? 1.0 : it->second;
}

std::string TunedSelection::measured_reason(const StepInfo& s, const std::string&) const {
  const Measurement& m = *winners_.at(tune_key(s.plan, s.step, layout_).id);
  return fmt::format("measured fastest: {:.4g} ms median of {} runs on {} (tuning database)",
                     *m.median_ms, m.runs, db_.gpu_identity);
}

} // namespace kiln
