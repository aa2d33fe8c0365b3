#include "generator/schedule/strategy.hpp"

#include "generator/lower/plan_builder.hpp"
#include "generator/schedule/solved_schedule.hpp"
#include "runtime/error.hpp"
#include "schedules/chain_strategies.hpp"
#include "schedules/dag_strategies.hpp"
#include "schedules/infeasible.hpp"

#include <chrono>
#include <fmt/format.h>

namespace kiln {

std::optional<Strategy> parse_strategy(std::string_view name) {
  for (Strategy s : all_strategies)
    if (strategy_name(s) == name) return s;
  return std::nullopt;
}

std::string_view strategy_name(Strategy s) {
  switch (s) {
  case Strategy::store_all: return "store-all";
  case Strategy::sqrt: return "sqrt";
  case Strategy::rotor: return "rotor";
  case Strategy::dtr: return "dtr";
  }
  return "?";
}

namespace {

sched::Dag training_dag(const TrainingGraph& g, const std::vector<double>& times) {
  sched::Dag d;
  for (size_t j = 0; j < g.ops().size(); ++j) {
    const TrainOp& op = g.ops()[j];
    sched::DagOp o;
    o.name = op.name;
    o.compute_time = times[j];
    o.output_bytes = op.output_bytes;
    o.inputs = op.inputs;
    o.temp_bytes = op.temp_bytes;
    o.evictable = op.kind == TrainOp::forward || op.kind == TrainOp::loss;
    d.ops.push_back(o);
    if (op.kind == TrainOp::param_grad || op.kind == TrainOp::tiled_backward)
      d.outputs.push_back(int(j));
  }
  d.validate();
  return d;
}

[[noreturn]] void infeasible(Strategy s, int64_t budget, int64_t min_bytes) {
  throw Error(
      "", "--budget",
      fmt::format("no {} schedule fits in {} bytes ({:.1f} MiB); the smallest feasible budget is "
                  "{} bytes ({:.1f} MiB)",
                  strategy_name(s), budget, budget / 1048576.0, min_bytes, min_bytes / 1048576.0));
}

} // namespace

TrainingScheduler::TrainingScheduler(const Model& m, const GpuDesc& g, const ScheduleOptions& o)
    : graph_(m, o.lower), slots_(o.slots) {
  times_ = op_times(graph_, layer_times(m, g, o.profile));
  chain_ = model_chain(graph_, times_, o.max_stages);
  dag_ = training_dag(graph_, times_);
  store_all_peak_ =
      std::max(sched::store_all(chain_.chain).peak_bytes, sched::dag_store_all(dag_).peak_bytes);
}

TrainingSchedule TrainingScheduler::solve(Strategy s, int64_t budget) const {
  try {
    return try_solve(s, budget);
  } catch (const sched::Infeasible& e) {
    infeasible(s, budget, e.min_feasible_bytes);
  }
}

TrainingSchedule TrainingScheduler::try_solve(Strategy s, int64_t budget) const {
  const auto t0 = std::chrono::steady_clock::now();
  TrainingSchedule r;
  r.strategy = s;
  r.budget_bytes = budget;
  if (s == Strategy::dtr) {
    const sched::DagResult d = sched::dtr(dag_, budget);
    r.peak_bytes = d.peak_bytes;
    r.time_us = d.time;
    r.store_all_time_us = sched::dag_store_all(dag_).time;
    r.ops = nlohmann::ordered_json::array();
    for (const sched::DagStep& st : d.steps) {
      r.ops.push_back({{"op", st.kind == sched::DagStep::compute ? "compute" : "free"},
                       {"tensor", dag_.ops[st.op].name}});
      if (st.kind == sched::DagStep::compute) r.order.push_back(st.op);
    }
  } else {
    sched::ChainResult c;
    if (s == Strategy::store_all) {
      c = sched::store_all(chain_.chain);
      if (c.peak_bytes > budget) throw sched::Infeasible("store-all", c.peak_bytes);
    } else if (s == Strategy::sqrt) {
      c = sched::sqrt_segments(chain_.chain, budget);
    } else {
      c = sched::rotor(chain_.chain, budget, slots_);
    }
    r.peak_bytes = c.peak_bytes;
    r.time_us = c.time;
    r.store_all_time_us = sched::store_all(chain_.chain).time;
    r.ops = chain_ops_json(c.ops);
    r.order = s == Strategy::store_all ? graph_.store_all_order() : chain_ops_order(chain_, c.ops);
  }
  r.solve_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

Plan TrainingScheduler::plan(const TrainingSchedule& s) const {
  return finish_plan(graph_.lower(s.order));
}

int64_t plan_transient_peak(const Plan& p) {
  std::vector<char> live(p.buffers.size(), 0);
  int64_t cur = 0, peak = 0;
  for (const Phase& ph : p.phases)
    for (const Step& s : ph.steps) {
      if (s.kind == StepKind::free) {
        if (live[s.buffer]) cur -= p.buffers[s.buffer].bytes(), live[s.buffer] = 0;
        continue;
      }
      for (const Arg& a : s.args) {
        const int b = p.base(a.buffer);
        if (!live[b] && !is_persistent(p.buffers[b].role)) live[b] = 1, cur += p.buffers[b].bytes();
      }
      peak = std::max(peak, cur);
    }
  return peak;
}

} // namespace kiln
