#include "generator/schedule/budget_sweep.hpp"

#include "generator/lower/tiled_segment.hpp"
#include "runtime/error.hpp"
#include "schedules/infeasible.hpp"

#include <fmt/format.h>

namespace kiln {

std::vector<SweepPoint>
budget_sweep(const SolveFn& solve, const std::vector<std::string>& strategies, int64_t reference) {
  std::vector<SweepPoint> r;
  for (const std::string& st : strategies)
    for (int pct = 10; pct <= 100; pct += 5) {
      SweepPoint p{st, pct, reference * pct / 100, std::nullopt};
      try {
        p.solved = solve(st, p.budget);
      } catch (const Error&) {
      } catch (const sched::Infeasible&) {
      }
      r.push_back(std::move(p));
    }
  return r;
}

std::string budget_sweep_csv(const std::vector<SweepPoint>& points) {
  std::string csv =
      "strategy,budget_fraction,budget_bytes,feasible,peak_bytes,time,store_all_time,overhead\n";
  for (const SweepPoint& p : points) {
    if (!p.solved) {
      csv += fmt::format("{},{:.2f},{},0,,,,\n", p.strategy, p.percent / 100.0, p.budget);
      continue;
    }
    const SolvedSchedule& s = *p.solved;
    csv += fmt::format("{},{:.2f},{},1,{},{:.3f},{:.3f},{:.6f}\n", p.strategy, p.percent / 100.0,
                       p.budget, s.peak, s.time, s.store_all_time, s.time / s.store_all_time - 1);
  }
  return csv;
}

std::vector<std::string> chain_sweep_strategies(const sched::Chain& c) {
  std::vector<std::string> st = {"store-all", "sqrt", "rotor", "dtr"};
  if (c.length() <= 6) st.push_back("exhaustive");
  return st;
}

std::vector<std::string> model_sweep_strategies(const Model& m) {
  std::vector<std::string> st = {"store-all", "sqrt", "rotor", "dtr"};
  if (find_tiled_segment(m, true)) st.push_back("tiled");
  return st;
}

SolveFn model_solver(const Model& m, const GpuDesc& g, const ScheduleOptions& o,
                     const TrainingScheduler& ts) {
  return [&m, &g, o, &ts](const std::string& s, int64_t b) {
    return s == "tiled" ? solved_tiled(m, schedule_tiled(m, g, o, b, std::nullopt))
                        : solve_model(ts, *parse_strategy(s), b);
  };
}

} // namespace kiln
