// The tiled strategy (SFT, DESIGN.md 5.2) for a whole model: a leading segment of windowed
// layers runs tile by tile; the rest of the network runs untiled, in training under
// store-all when that fits the budget and rotor otherwise. Unless a tiling is forced (then
// on the longest segment), each candidate segment end — where the resolution drops, and the
// longest — gets the fewest tiles whose plan keeps its live activations (what the executor
// measures) within the budget, and the fastest predicted step wins. The segment planner
// proposes; whole plans decide: its target is tightened while the plan does not fit (the
// plan adds what the planner does not see: the layers after the segment, gradients crossing
// its boundary, region copies) and then bisected toward fewer tiles while plans still fit
// (the planner holds values the executor frees early).
#pragma once

#include "generator/schedule/strategy.hpp"
#include "generator/lower/tiled_segment.hpp"

#include <optional>
#include <string>
#include <utility>

namespace kiln {

struct TiledSchedule {
  TiledSegment segment; // with its tiling
  Plan steps;           // before finish_plan (generate's passes rewrite it)
  bool train = false;
  int64_t budget_bytes = -1;        // -1: none given (forced tiles)
  int64_t peak_bytes = 0;           // the finished plan's live activation peak
  int64_t predicted_peak_bytes = 0; // training: the rest's chain schedule's prediction
  double time_us = 0;               // predicted
  double untiled_time_us = 0;       // predicted for the untiled store-all step (or forward)
  int64_t untiled_peak_bytes = 0;   // its peak: what a budget's percentage is of
  double recompute_factor = 1;
  std::string rest;           // training: the rest's strategy (store-all or rotor)
  nlohmann::ordered_json ops; // training: the rest's schedule
  int plans_tried = 0;
  int segments_tried = 1;     // candidate segment ends searched for tiles
  int segment_candidates = 1; // candidate segment ends ranked
  double solve_seconds = 0;
  std::string tiles() const; // "8x7"
};

// What 100% of a budget means for the tiled strategy: the untiled store-all peak in training
// (TrainingScheduler::store_all_peak), the untiled forward's live peak in inference.
struct UntiledReference {
  int64_t peak_bytes = 0;
  double time_us = 0;
};
UntiledReference untiled_reference(const Model& m, const GpuDesc& g, const ScheduleOptions& o);

// `o.lower.train` chooses training or inference. Without `tiles` a budget is required; with
// both, the forced tiling must fit it. Throws kiln::Error naming the smallest feasible
// budget when no tiling fits, and when the model starts with no tileable layer.
TiledSchedule schedule_tiled(const Model& m, const GpuDesc& g, const ScheduleOptions& o,
                             std::optional<int64_t> budget,
                             std::optional<std::pair<int64_t, int64_t>> tiles);
// The same from the command line's texts (empty: not given): `budget` as parse_budget takes
// it, a percentage meaning of the untiled reference's peak; `tiles` as parse_tiles.
TiledSchedule schedule_tiled(const Model& m, const GpuDesc& g, const ScheduleOptions& o,
                             const std::string& budget, const std::string& tiles);

} // namespace kiln
