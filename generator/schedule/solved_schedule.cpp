#include "generator/schedule/solved_schedule.hpp"

#include "generator/lower/plan_builder.hpp"
#include "runtime/error.hpp"
#include "schedules/chain_strategies.hpp"
#include "schedules/chain_to_dag.hpp"
#include "schedules/dag_strategies.hpp"
#include "schedules/infeasible.hpp"
#include "schedules/memory_plan.hpp"

#include <map>

namespace kiln {

nlohmann::ordered_json chain_ops_json(const std::vector<sched::ChainOp>& ops) {
  nlohmann::ordered_json j = nlohmann::ordered_json::array();
  for (const sched::ChainOp& op : ops) {
    const std::string text = sched::to_string(op); // "forward_none 3", "free abar_2"
    const auto sp = text.find(' ');
    if (op.kind == sched::ChainOp::free)
      j.push_back({{"op", "free"}, {"tensor", text.substr(sp + 1)}});
    else
      j.push_back({{"op", text.substr(0, sp)}, {"stage", op.stage}});
  }
  return j;
}

int64_t chain_arena(const sched::Chain& c, const std::vector<sched::ChainOp>& ops) {
  std::vector<sched::Lifetime> life;
  sched::ChainState st(c);
  auto snapshot = [&](const sched::ChainState& s) {
    std::vector<std::pair<int, int64_t>> r; // (tensor key, bytes)
    for (int i = 0; i <= c.length(); ++i) {
      if (s.act[size_t(i)] == sched::ChainState::plain) r.push_back({3 * i, c.activation_bytes(i)});
      if (s.act[size_t(i)] == sched::ChainState::saved)
        r.push_back({3 * i + 1, c.stage(i).saved_bytes});
      if (i < c.length() && s.grad[size_t(i)]) r.push_back({3 * i + 2, c.gradient_bytes(i)});
    }
    return r;
  };
  std::map<int, std::pair<int, int64_t>> open; // key -> (first op, bytes)
  for (auto [k, b] : snapshot(st))
    open[k] = {0, b};
  for (size_t i = 0; i < ops.size(); ++i) {
    sched::step(c, st, ops[i]);
    std::map<int, int64_t> now;
    for (auto [k, b] : snapshot(st))
      now[k] = b;
    for (auto it = open.begin(); it != open.end();)
      if (!now.count(it->first)) {
        life.push_back({it->second.second, it->second.first, int(i)});
        it = open.erase(it);
      } else {
        ++it;
      }
    for (auto [k, b] : now)
      if (!open.count(k)) open[k] = {int(i), b};
  }
  for (auto& [k, v] : open)
    life.push_back({v.second, v.first, int(ops.size())});
  return sched::plan_memory(life).arena_bytes;
}

SolvedSchedule solve_chain(const sched::Chain& c, const std::string& strategy, int64_t budget,
                           int slots) {
  SolvedSchedule s;
  s.strategy = strategy;
  s.budget = budget;
  const sched::ChainResult all = sched::store_all(c);
  s.store_all_time = all.time;
  if (strategy == "dtr") {
    const sched::Dag d = sched::chain_to_dag(c);
    const sched::DagResult r = sched::dtr(d, budget);
    s.peak = r.peak_bytes, s.time = r.time, s.arena = r.peak_bytes;
    s.store_all_time = sched::dag_store_all(d).time;
    s.ops = nlohmann::ordered_json::array();
    for (const auto& st : r.steps)
      s.ops.push_back({{"op", st.kind == sched::DagStep::compute ? "compute" : "free"},
                       {"tensor", d.ops[st.op].name}});
    return s;
  }
  sched::ChainResult r;
  if (strategy == "store-all") {
    r = all;
    if (r.peak_bytes > budget) throw sched::Infeasible("store-all", r.peak_bytes);
  } else if (strategy == "sqrt") {
    r = sched::sqrt_segments(c, budget);
  } else if (strategy == "rotor") {
    r = sched::rotor(c, budget, slots);
  } else if (strategy == "exhaustive") {
    if (c.length() > 8)
      throw Error("", "--strategy", "exhaustive searches chains of up to 8 stages");
    r = sched::exhaustive(c, budget);
  } else {
    throw Error("", "--strategy", cat("unknown strategy \"", strategy, "\" for a chain"));
  }
  s.peak = r.peak_bytes, s.time = r.time, s.ops = chain_ops_json(r.ops);
  s.arena = chain_arena(c, r.ops);
  return s;
}

SolvedSchedule solve_model(const TrainingScheduler& ts, Strategy st, int64_t budget) {
  const TrainingSchedule r = ts.solve(st, budget);
  SolvedSchedule s;
  s.strategy = std::string(strategy_name(st));
  s.budget = budget, s.peak = r.peak_bytes, s.time = r.time_us;
  s.store_all_time = r.store_all_time_us;
  s.seconds = r.solve_seconds, s.ops = r.ops;
  const Plan p = ts.plan(r);
  s.arena = p.arena_bytes;
  s.measured = plan_transient_peak(p);
  return s;
}

SolvedSchedule solved_tiled(const Model& m, const TiledSchedule& t) {
  SolvedSchedule s;
  s.strategy = "tiled";
  s.budget = t.budget_bytes;
  s.peak = t.predicted_peak_bytes;
  s.measured = t.peak_bytes;
  s.time = t.time_us, s.store_all_time = t.untiled_time_us;
  s.seconds = t.solve_seconds;
  s.arena = finish_plan(t.steps).arena_bytes;
  s.ops = t.ops.is_null() ? nlohmann::ordered_json::array() : t.ops;
  std::vector<std::string> layers;
  for (int n : t.segment.nodes)
    layers.push_back(m.nodes[n].name);
  s.extra["train"] = t.train;
  s.extra["tiles"] = t.tiles();
  s.extra["tile_rows"] = t.segment.tiling.rows();
  s.extra["tile_cols"] = t.segment.tiling.cols();
  s.extra["segment"] = layers;
  s.extra["recompute_factor"] = t.recompute_factor;
  if (t.train) s.extra["rest"] = t.rest;
  s.extra["plans_tried"] = t.plans_tried;
  s.extra["segments_tried"] = t.segments_tried;
  s.extra["segment_candidates"] = t.segment_candidates;
  return s;
}

} // namespace kiln
