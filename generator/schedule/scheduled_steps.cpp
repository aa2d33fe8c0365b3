#include "generator/schedule/scheduled_steps.hpp"

#include "generator/schedule/budget.hpp"
#include "generator/schedule/strategy.hpp"
#include "generator/schedule/tiled_strategy.hpp"
#include "runtime/error.hpp"

namespace kiln {

ScheduledSteps schedule_steps(const Model& m, const GpuDesc& g, const LowerOptions& lo,
                              const ScheduleRequest& r) {
  ScheduledSteps s;
  ScheduleOptions so;
  so.slots = r.slots;
  so.lower = lo;
  ScheduleChoice c;
  c.budget = r.budget;
  if (r.schedule == "tiled") {
    TiledSchedule t = schedule_tiled(m, g, so, r.budget, r.tiles);
    c.strategy = "tiled";
    c.budget_bytes = t.budget_bytes;
    c.tiles = t.tiles();
    c.segment = cat(m.nodes[size_t(t.segment.nodes.front())].name, "..",
                    m.nodes[size_t(t.segment.output_node())].name);
    c.rest = t.rest;
    c.peak_bytes = t.peak_bytes;
    c.time_ratio = t.time_us / t.untiled_time_us;
    c.recompute_factor = t.recompute_factor;
    s.steps = std::move(t.steps);
  } else if (!r.tiles.empty()) {
    throw Error("", "--tiles", "forces the tiling of --schedule tiled");
  } else if (r.train && (!r.schedule.empty() || !r.budget.empty())) {
    const auto strategy = parse_strategy(r.schedule.empty() ? "store-all" : r.schedule);
    if (!strategy) throw Error("", "--schedule", cat("unknown strategy \"", r.schedule, "\""));
    const TrainingScheduler ts(m, g, so);
    c.budget_bytes =
        r.budget.empty() ? ts.store_all_peak() : parse_budget(r.budget, ts.store_all_peak());
    const TrainingSchedule solved = ts.solve(*strategy, c.budget_bytes);
    c.strategy = strategy_name(*strategy);
    c.peak_bytes = solved.peak_bytes;
    c.time_ratio = solved.time_us / solved.store_all_time_us;
    s.steps = ts.graph().lower(solved.order);
  } else {
    s.steps = lower_model_steps(m, lo);
    return s;
  }
  s.choice = c;
  return s;
}

} // namespace kiln
