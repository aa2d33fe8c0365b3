// One solved schedule, whatever the problem (kiln schedule): a kiln-chain/1 chain under
// store-all, sqrt, rotor, dtr (on the chain's DAG) or exhaustive search; a model's training
// step under a TrainingScheduler strategy; a tiled plan. The same figures for each, so they
// print and sweep alike.
#pragma once

#include "generator/schedule/strategy.hpp"
#include "generator/schedule/tiled_strategy.hpp"
#include "schedules/chain.hpp"
#include "schedules/chain_schedule.hpp"

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace kiln {

struct SolvedSchedule {
  std::string strategy;
  int64_t budget = 0;    // -1: none (forced tiles)
  int64_t peak = 0;      // predicted by the strategy
  int64_t arena = 0;     // of the memory plan laying out every tensor's lifetime
  int64_t measured = -1; // the plan's live activation peak, where there is a plan
  double time = 0, store_all_time = 0, seconds = 0;
  nlohmann::ordered_json ops;                                      // the schedule
  nlohmann::ordered_json extra = nlohmann::ordered_json::object(); // strategy-specific fields
};

// A chain schedule's operations: [{"op": "forward_all", "stage": 3}, {"op": "free", "tensor":
// "abar_2"}, ...].
nlohmann::ordered_json chain_ops_json(const std::vector<sched::ChainOp>& ops);

// The arena of a chain schedule: every tensor's residency as a lifetime, laid out by the
// memory planner.
int64_t chain_arena(const sched::Chain& c, const std::vector<sched::ChainOp>& ops);

// `strategy`: store-all, sqrt, rotor, dtr or exhaustive (chains of up to 8 stages). Throws
// sched::Infeasible (with the smallest feasible budget) when none fits.
SolvedSchedule solve_chain(const sched::Chain& c, const std::string& strategy, int64_t budget,
                           int slots);

// A model's training step (throws kiln::Error naming the smallest feasible budget).
SolvedSchedule solve_model(const TrainingScheduler& ts, Strategy st, int64_t budget);

// A tiled schedule's figures; `extra` holds its tiling, segment and search.
SolvedSchedule solved_tiled(const Model& m, const TiledSchedule& t);

} // namespace kiln
