// Training schedules of a model under a memory budget: the strategies of DESIGN.md 4.3 on
// the model's chain (store-all, sqrt, rotor) or training DAG (dtr), solved, and lowered to a
// plan whose live activation bytes stay within the budget.
#pragma once

#include "generator/gpu/gpu_desc.hpp"
#include "generator/cost/layer_times.hpp"
#include "generator/schedule/step_times.hpp"
#include "generator/schedule/model_chain.hpp"
#include "generator/lower/training_graph.hpp"
#include "schedules/dag.hpp"

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace kiln {

enum class Strategy { store_all, sqrt, rotor, dtr };
std::optional<Strategy> parse_strategy(std::string_view name);
std::string_view strategy_name(Strategy s);
inline constexpr Strategy all_strategies[] = {Strategy::store_all, Strategy::sqrt, Strategy::rotor,
                                              Strategy::dtr};

struct ScheduleOptions {
  int slots = 500;      // rotor's memory discretisation
  int max_stages = 256; // chains longer than this merge neighbouring stages
  const Profile* profile = nullptr;
  LowerOptions lower; // learning rate, descriptor identity
};

struct TrainingSchedule {
  Strategy strategy = Strategy::store_all;
  int64_t budget_bytes = 0;
  int64_t peak_bytes = 0;       // predicted by the strategy's simulator
  double time_us = 0;           // predicted
  double store_all_time_us = 0; // the same simulator's store-all time
  nlohmann::ordered_json ops;   // the schedule: [{"op": "forward_all", "stage": 3}, ...]
  std::vector<int> order;       // training-graph ops, recomputations included
  double solve_seconds = 0;
};

class TrainingScheduler {
public:
  TrainingScheduler(const Model& m, const GpuDesc& g, const ScheduleOptions& o);

  // What "100%" of a budget means: the larger of the chain's and the DAG's store-all peaks.
  int64_t store_all_peak() const { return store_all_peak_; }
  const ModelChain& chain() const { return chain_; }
  const sched::Dag& dag() const { return dag_; }
  const TrainingGraph& graph() const { return graph_; }

  // Throws kiln::Error naming the smallest feasible budget when none is met.
  TrainingSchedule solve(Strategy s, int64_t budget) const;
  // The same, throwing sched::Infeasible (with the smallest feasible budget) instead.
  TrainingSchedule try_solve(Strategy s, int64_t budget) const;
  // The finished plan of a schedule (reference steps).
  Plan plan(const TrainingSchedule& s) const;

private:
  TrainingGraph graph_;
  std::vector<double> times_;
  ModelChain chain_;
  sched::Dag dag_;
  int slots_;
  int64_t store_all_peak_ = 0;
};

// The largest number of transient bytes a plan holds live at once (what the executor measures).
int64_t plan_transient_peak(const Plan& p);

} // namespace kiln
