// What measurements tell selection (kiln tune): a measured winner for a step's shape, and
// per-family correction factors of the cost model fitted from measured times. Selection
// sees only this interface; the tuning database (generator/tune/) implements it.
#pragma once

#include "generator/select/family.hpp"

#include <string>
#include <string_view>

namespace kiln {

class SelectionHints {
public:
  virtual ~SelectionHints() = default;
  // The variant measured fastest for this step's shape on this GPU, or "" when none was.
  virtual std::string measured_winner(const StepInfo& s) const = 0;
  // Why the measured winner is not used (it no longer exists or is invalid here): said
  // once per step shape, as a warning.
  virtual void winner_ignored(const StepInfo& s, const std::string& variant,
                              const std::string& why) const = 0;
  // Measured time over predicted time for the family's variants (1: no measurements).
  virtual double correction(std::string_view family) const = 0;
  // How to describe the measured winner in the manifest's reason.
  virtual std::string measured_reason(const StepInfo& s, const std::string& variant) const = 0;
};

} // namespace kiln
