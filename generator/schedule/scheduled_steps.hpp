// A model's steps under the schedule a command asks for (DESIGN.md 4.3): segmented fused
// tiling, a training step under a recompute strategy and budget, or none. One place for
// `kiln generate` (which fuses, lays out and rewrites the steps) and the cpu backend's runs
// (which finish them as they are).
#pragma once

#include "generator/gpu/gpu_desc.hpp"
#include "generator/lower/lower.hpp"
#include "generator/model/model.hpp"
#include "runtime/plan.hpp"

#include <cstdint>
#include <optional>
#include <string>

namespace kiln {

// What the schedule chose, for manifests and the commands' summaries. Unknown figures stay
// negative or empty.
struct ScheduleChoice {
  std::string strategy;        // store-all, sqrt, rotor, dtr or tiled
  std::string budget;          // as given ("" none)
  int64_t budget_bytes = -1;   // resolved (-1: forced tiles without a budget)
  std::string tiles;           // tiled: "8x7"
  std::string segment;         // tiled: "conv1..layer1.0.relu2"
  std::string rest;            // tiled training: the rest's strategy
  int64_t peak_bytes = -1;     // predicted (recompute) or the plan's (tiled)
  double time_ratio = -1;      // predicted time over store-all's (or the untiled step's)
  double recompute_factor = 1; // tiled: the segment's recompute factor
};

// The command's schedule options, as given (empty: not given).
struct ScheduleRequest {
  bool train = false;
  std::string schedule; // store-all, sqrt, rotor, dtr, tiled
  std::string budget;   // parse_budget's forms; a percentage of the store-all (untiled) peak
  std::string tiles;    // forced tiling, "RxC" (tiled only)
  int slots = 500;      // the recompute solvers' memory resolution
};

struct ScheduledSteps {
  Plan steps;                           // before finish_plan
  std::optional<ScheduleChoice> choice; // none when the request schedules nothing
};

// Scheduled when tiled, or when a training step names a strategy or a budget; otherwise the
// lowered steps as they are. Throws kiln::Error for an unknown strategy, for tiles without
// the tiled strategy and when no schedule fits the budget.
ScheduledSteps schedule_steps(const Model& m, const GpuDesc& g, const LowerOptions& lo,
                              const ScheduleRequest& r);

} // namespace kiln
