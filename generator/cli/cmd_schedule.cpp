// kiln schedule: a training step's recompute schedule under a memory budget, solved by
// generator/schedule/ (solved_schedule.hpp, budget_sweep.hpp) and printed here.
#include "generator/cli/commands.hpp"
#include "generator/cli/format.hpp"
#include "generator/cli/model_args.hpp"
#include "generator/schedule/budget.hpp"
#include "generator/schedule/budget_sweep.hpp"
#include "generator/schedule/chain_json.hpp"
#include "generator/schedule/solved_schedule.hpp"
#include "generator/tune/svg_plot.hpp"
#include "runtime/error.hpp"
#include "runtime/io/file.hpp"
#include "schedules/chain_strategies.hpp"
#include "schedules/infeasible.hpp"

#include <cmath>
#include <fmt/format.h>

namespace kiln::cli {

namespace {

struct ScheduleArgs {
  ModelArgs model;
  std::string gpu = "h200";
  std::string chain;
  std::string budget;
  std::string strategy = "rotor";
  std::string tiles;
  bool train = false; // only the tiled strategy also plans inference
  bool json = false;
  int slots = 500;
  std::string profile;
  std::string sweep;
};

// What the tiled strategy chose, in a line.
std::string tiled_summary(const Model& m, const TiledSchedule& t) {
  const TiledSegment& seg = t.segment;
  const std::string first = m.nodes[size_t(seg.nodes.front())].name;
  const std::string last = m.nodes[size_t(seg.nodes.back())].name;
  const sched::SegOp& out = seg.problem.ops[size_t(seg.problem.output)];
  return fmt::format(
      "{}: {} tiles of the {}x{} output of {}..{} ({} layers{}), recompute factor {:.3f}{}",
      t.train ? "training step" : "inference", t.tiles(), out.out_h, out.out_w, first, last,
      seg.nodes.size(),
      t.segment_candidates > 1
          ? fmt::format("; the fastest of {} segment ends searched, of {} ranked", t.segments_tried,
                        t.segment_candidates)
          : std::string(),
      t.recompute_factor, t.train ? "; the rest of the network under " + t.rest : "");
}

// The chain solvers' infeasibility, as the user's error: the smallest budget that works.
SolvedSchedule solve_chain_or_explain(const sched::Chain& c, const std::string& strategy,
                                      int64_t budget, int slots) {
  try {
    return solve_chain(c, strategy, budget, slots);
  } catch (const sched::Infeasible& e) {
    throw Error(
        "", "--budget",
        fmt::format(
            "no {} schedule fits in {} bytes; the smallest feasible budget is {} bytes ({})",
            strategy, budget, e.min_feasible_bytes, human_bytes(e.min_feasible_bytes)));
  }
}

void print(const SolvedSchedule& s, int64_t reference, bool json, int stages,
           const std::string& summary = "") {
  if (json) {
    nlohmann::ordered_json j;
    j["strategy"] = s.strategy;
    j["budget_bytes"] = s.budget;
    j["peak_bytes"] = s.peak;
    j["time"] = s.time;
    j["store_all_time"] = s.store_all_time;
    j["arena_bytes"] = s.arena;
    j["store_all_peak_bytes"] = reference;
    j["overhead"] = s.time / s.store_all_time - 1;
    if (s.measured >= 0) j["plan_peak_bytes"] = s.measured;
    j["stages"] = stages;
    j["solve_seconds"] = s.seconds;
    for (const auto& [k, v] : s.extra.items())
      j[k] = v;
    j["ops"] = s.ops;
    fmt::print("{}\n", j.dump(1));
    return;
  }
  // What the tiled strategy is measured against: the untiled step (or forward, in inference).
  const std::string base = s.strategy != "tiled"           ? "store-all"
                           : s.extra.value("train", false) ? "untiled store-all"
                                                           : "untiled forward";
  if (s.budget >= 0)
    fmt::print("strategy {}: budget {} ({:.0f}% of the {} peak {})\n", s.strategy,
               human_bytes(s.budget), 100.0 * double(s.budget) / double(reference), base,
               human_bytes(reference));
  else
    fmt::print("strategy {}: no budget (the {} peak is {})\n", s.strategy, base,
               human_bytes(reference));
  if (!summary.empty()) fmt::print("{}\n", summary);
  fmt::print("predicted peak {}, time {:.1f} us vs {} {:.1f} us: recompute overhead {:+.1f}%\n",
             human_bytes(s.peak), s.time, base, s.store_all_time,
             100 * (s.time / s.store_all_time - 1));
  fmt::print("arena {}{}{}\n", human_bytes(s.arena),
             s.measured >= 0
                 ? fmt::format(", the plan's live activations peak at {}", human_bytes(s.measured))
                 : "",
             s.ops.empty() ? ""
             : stages > 0  ? fmt::format("; {} operations over {} stages", s.ops.size(), stages)
                           : fmt::format("; {} operations", s.ops.size()));
  std::string line;
  for (const auto& op : s.ops) {
    std::string t = op["op"].get<std::string>() + " " +
                    (op.contains("stage") ? std::to_string(op["stage"].get<int>())
                                          : op["tensor"].get<std::string>());
    if (line.size() + t.size() > 96) fmt::print("  {}\n", line), line.clear();
    line += (line.empty() ? "" : ", ") + t;
  }
  if (!line.empty()) fmt::print("  {}\n", line);
}

// The curve as CSV, and beside it an SVG plot of the overhead against the budget.
void write_sweep(const std::vector<SweepPoint>& points, const std::string& csv_path,
                 const std::string& title) {
  std::vector<Series> series;
  for (const SweepPoint& p : points) {
    if (series.empty() || series.back().name != p.strategy) series.push_back({p.strategy, {}});
    const double overhead = p.solved ? p.solved->time / p.solved->store_all_time - 1 : NAN;
    series.back().points.push_back({p.percent / 100.0, 100 * overhead});
  }
  io::write_file_atomic(csv_path, budget_sweep_csv(points));
  const std::string svg = csv_path.substr(0, csv_path.rfind('.')) + ".svg";
  io::write_file_atomic(svg, svg_line_plot(title, "budget (fraction of the store-all peak)",
                                           "recompute overhead (%)", series));
  fmt::print("wrote {} and {}\n", csv_path, svg);
}

void schedule_cmd(const ScheduleArgs& a) {
  if (!a.chain.empty()) {
    const sched::Chain c = load_chain(a.chain);
    const int64_t reference = sched::store_all(c).peak_bytes;
    if (!a.sweep.empty()) {
      const auto solve = [&](const std::string& s, int64_t b) {
        return solve_chain(c, s, b, a.slots);
      };
      write_sweep(budget_sweep(solve, chain_sweep_strategies(c), reference), a.sweep, a.chain);
      return;
    }
    if (a.budget.empty()) throw Error("", "--budget", "is required");
    print(solve_chain_or_explain(c, a.strategy, parse_budget(a.budget, reference), a.slots),
          reference, a.json, c.length());
    return;
  }
  if (a.model.model.empty()) throw Error("", "MODEL", "give a model (or --chain FILE)");
  if (!a.tiles.empty() && a.strategy != "tiled")
    throw Error("", "--tiles", "forces the tiling of --strategy tiled");
  const Model m = a.model.load();
  Profile profile;
  ScheduleOptions so;
  so.slots = a.slots;
  if (!a.profile.empty()) profile = load_profile(a.profile), so.profile = &profile;
  if (a.strategy == "tiled" && a.sweep.empty()) {
    so.lower.train = a.train;
    const TiledSchedule t = schedule_tiled(m, load_gpu(a.gpu), so, a.budget, a.tiles);
    print(solved_tiled(m, t), t.untiled_peak_bytes, a.json, 0, tiled_summary(m, t));
    return;
  }
  so.lower.train = true;
  const GpuDesc g = load_gpu(a.gpu);
  const TrainingScheduler ts(m, g, so);
  const int64_t reference = ts.store_all_peak();
  if (!a.sweep.empty()) {
    write_sweep(budget_sweep(model_solver(m, g, so, ts), model_sweep_strategies(m), reference),
                a.sweep, m.name + " training step");
    return;
  }
  if (a.strategy == "exhaustive")
    throw Error("", "--strategy", "exhaustive takes a --chain of up to 8 stages");
  if (a.budget.empty()) throw Error("", "--budget", "is required");
  print(solve_model(ts, *parse_strategy(a.strategy), parse_budget(a.budget, reference)), reference,
        a.json, int(ts.chain().chain.stages.size()));
}

} // namespace

void add_schedule(CLI::App& app) {
  auto a = std::make_shared<ScheduleArgs>();
  CLI::App* cmd = app.add_subcommand(
      "schedule",
      "recompute schedule of a training step under a memory budget: predicted peak and time, "
      "overhead against store-all, arena size. Strategies: store-all, sqrt "
      "(checkpoint_sequential), "
      "rotor (optimal on chains), dtr (offline DTR on the DAG), exhaustive (--chain, small)");
  a->model.add_to(cmd);
  cmd->get_option("MODEL")->required(false);
  cmd->add_option("--gpu", a->gpu, "descriptor whose roofline times the layers (default h200)");
  cmd->add_option("--chain", a->chain, "a kiln-chain/1 problem instead of a model");
  cmd->add_option("--budget", a->budget,
                  "bytes, 700MiB, 12GiB, or a fraction of the store-all peak: 40%");
  cmd->add_option(
         "--strategy", a->strategy,
         "store-all, sqrt, rotor (default), dtr, exhaustive, or tiled (segmented fused tiling: the "
         "leading conv/pool layers tile by tile, the fewest tiles that fit; the rest under "
         "store-all "
         "or rotor)")
      ->check(CLI::IsMember({"store-all", "sqrt", "rotor", "dtr", "exhaustive", "tiled"}));
  cmd->add_option("--tiles", a->tiles,
                  "--strategy tiled: force RxC tiles (4x4, or 8 for 8x8); --budget then optional");
  cmd->add_flag(
      "--train", a->train,
      "--strategy tiled: plan a training step rather than inference (the recompute strategies "
      "always schedule training steps)");
  cmd->add_flag("--json", a->json,
                "machine-readable: strategy, budget_bytes, peak_bytes, time, store_all_time, "
                "arena_bytes, ops");
  cmd->add_option("--slots", a->slots, "rotor's memory discretisation (default 500)");
  cmd->add_option("--profile", a->profile,
                  "measured layer times (kiln-profile/1) instead of the roofline");
  cmd->add_option("--sweep", a->sweep,
                  "write the budget/overhead curve of every strategy, 10%..100% of the store-all "
                  "peak, as this CSV and an SVG plot beside it");
  cmd->callback([a] { schedule_cmd(*a); });
}

} // namespace kiln::cli
