// The budget/overhead curve of `kiln schedule --sweep`: every strategy solved at 10%, 15%,
// ..., 100% of the store-all peak, infeasible budgets kept as such; and its CSV.
#pragma once

#include "generator/schedule/solved_schedule.hpp"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace kiln {

struct SweepPoint {
  std::string strategy;
  int percent = 0; // of the reference
  int64_t budget = 0;
  std::optional<SolvedSchedule> solved; // none: infeasible
};

using SolveFn = std::function<SolvedSchedule(const std::string& strategy, int64_t budget)>;

// `solve` throws kiln::Error or sched::Infeasible where a budget is infeasible.
std::vector<SweepPoint> budget_sweep(const SolveFn& solve,
                                     const std::vector<std::string>& strategies, int64_t reference);

// strategy,budget_fraction,budget_bytes,feasible,peak_bytes,time,store_all_time,overhead
std::string budget_sweep_csv(const std::vector<SweepPoint>& points);

// The strategies a chain's sweep compares (exhaustive on chains of up to 6 stages), and a
// model's training step's (tiled where the model has a leading tileable segment).
std::vector<std::string> chain_sweep_strategies(const sched::Chain& c);
std::vector<std::string> model_sweep_strategies(const Model& m);

// A model's training step under any strategy, tiled included.
SolveFn model_solver(const Model& m, const GpuDesc& g, const ScheduleOptions& o,
                     const TrainingScheduler& ts);

} // namespace kiln
