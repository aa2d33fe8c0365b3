// kiln schedule: a training step's recompute schedule under a memory budget.
#include "generator/cli/commands.hpp"
#include "generator/cli/format.hpp"
#include "generator/cli/model_args.hpp"
#include "generator/cli/svg_plot.hpp"
#include "generator/lower/plan_builder.hpp"
#include "generator/schedule/budget.hpp"
#include "generator/schedule/chain_json.hpp"
#include "generator/schedule/strategy.hpp"
#include "generator/schedule/tiled_strategy.hpp"
#include "runtime/error.hpp"
#include "runtime/io/file.hpp"
#include "schedules/chain_strategies.hpp"
#include "schedules/chain_to_dag.hpp"
#include "schedules/dag_strategies.hpp"
#include "schedules/infeasible.hpp"
#include "schedules/memory_plan.hpp"

#include <cmath>
#include <fmt/format.h>
#include <functional>
#include <map>

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

// One solved schedule, whatever the problem was.
struct Solved {
  std::string strategy;
  int64_t budget = 0, peak = 0, arena = 0, measured = -1;
  double time = 0, store_all_time = 0, seconds = 0;
  nlohmann::ordered_json ops;
  nlohmann::ordered_json extra = nlohmann::ordered_json::object(); // strategy-specific fields
  std::string summary;                                             // their line of text
};

// Arena of a chain schedule: every tensor's residency as a lifetime, laid out by the planner.
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

nlohmann::ordered_json chain_ops_json(const std::vector<sched::ChainOp>& ops) {
  nlohmann::ordered_json j = nlohmann::ordered_json::array();
  for (const sched::ChainOp& op : ops) {
    const std::string text = sched::to_string(op);
    const auto sp = text.find(' ');
    if (op.kind == sched::ChainOp::free)
      j.push_back({{"op", "free"}, {"tensor", text.substr(sp + 1)}});
    else
      j.push_back({{"op", text.substr(0, sp)}, {"stage", op.stage}});
  }
  return j;
}

Solved solve_chain(const sched::Chain& c, const std::string& strategy, int64_t budget, int slots) {
  Solved s;
  s.strategy = strategy;
  s.budget = budget;
  const sched::ChainResult all = sched::store_all(c);
  s.store_all_time = all.time;
  try {
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
    } else if (strategy == "sqrt")
      r = sched::sqrt_segments(c, budget);
    else if (strategy == "rotor")
      r = sched::rotor(c, budget, slots);
    else if (strategy == "exhaustive") {
      if (c.length() > 8)
        throw Error("", "--strategy", "exhaustive searches chains of up to 8 stages");
      r = sched::exhaustive(c, budget);
    }
    s.peak = r.peak_bytes, s.time = r.time, s.ops = chain_ops_json(r.ops);
    s.arena = chain_arena(c, r.ops);
  } catch (const sched::Infeasible& e) {
    throw Error(
        "", "--budget",
        fmt::format(
            "no {} schedule fits in {} bytes; the smallest feasible budget is {} bytes ({})",
            strategy, budget, e.min_feasible_bytes, human_bytes(e.min_feasible_bytes)));
  }
  return s;
}

Solved solve_model(const TrainingScheduler& ts, Strategy st, int64_t budget) {
  const TrainingSchedule r = ts.solve(st, budget);
  Solved s;
  s.strategy = std::string(strategy_name(st));
  s.budget = budget, s.peak = r.peak_bytes, s.time = r.time_us,
  s.store_all_time = r.store_all_time_us;
  s.seconds = r.solve_seconds, s.ops = r.ops;
  const Plan p = ts.plan(r);
  s.arena = p.arena_bytes;
  s.measured = plan_transient_peak(p);
  return s;
}

Solved solved_tiled(const Model& m, const ScheduleOptions& so, const TiledSchedule& t) {
  Solved s;
  s.strategy = "tiled";
  s.budget = t.budget_bytes;
  s.peak = t.predicted_peak_bytes;
  s.measured = t.peak_bytes;
  s.time = t.time_us, s.store_all_time = t.untiled_time_us;
  s.seconds = t.solve_seconds;
  s.arena = finish_plan(t.steps).arena_bytes;
  s.ops = t.ops.is_null() ? nlohmann::ordered_json::array() : t.ops;
  const TiledSegment& seg = t.segment;
  std::vector<std::string> layers;
  for (int n : seg.nodes)
    layers.push_back(m.nodes[n].name);
  s.extra["train"] = so.lower.train;
  s.extra["tiles"] = t.tiles();
  s.extra["tile_rows"] = seg.tiling.rows();
  s.extra["tile_cols"] = seg.tiling.cols();
  s.extra["segment"] = layers;
  s.extra["recompute_factor"] = t.recompute_factor;
  if (so.lower.train) s.extra["rest"] = t.rest;
  s.extra["plans_tried"] = t.plans_tried;
  s.extra["segments_tried"] = t.segments_tried;
  s.extra["segment_candidates"] = t.segment_candidates;
  const sched::SegOp& out = seg.problem.ops[size_t(seg.problem.output)];
  s.summary = fmt::format(
      "{}: {} tiles of the {}x{} output of {}..{} ({} layers{}), recompute factor {:.3f}{}",
      so.lower.train ? "training step" : "inference", t.tiles(), out.out_h, out.out_w,
      layers.front(), layers.back(), layers.size(),
      t.segment_candidates > 1
          ? fmt::format("; the fastest of {} segment ends searched, of {} ranked", t.segments_tried,
                        t.segment_candidates)
          : std::string(),
      t.recompute_factor, so.lower.train ? "; the rest of the network under " + t.rest : "");
  return s;
}

void print(const Solved& s, int64_t reference, bool json, int stages) {
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
  if (!s.summary.empty()) fmt::print("{}\n", s.summary);
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

void sweep(const std::function<Solved(const std::string&, int64_t)>& solve,
           const std::vector<std::string>& strategies, int64_t reference,
           const std::string& csv_path, const std::string& title) {
  std::string csv =
      "strategy,budget_fraction,budget_bytes,feasible,peak_bytes,time,store_all_time,overhead\n";
  std::vector<Series> series;
  for (const std::string& st : strategies) {
    Series ser{st, {}};
    for (int pct = 10; pct <= 100; pct += 5) {
      const int64_t b = reference * pct / 100;
      double overhead = NAN;
      try {
        const Solved s = solve(st, b);
        overhead = s.time / s.store_all_time - 1;
        csv += fmt::format("{},{:.2f},{},1,{},{:.3f},{:.3f},{:.6f}\n", st, pct / 100.0, b, s.peak,
                           s.time, s.store_all_time, overhead);
      } catch (const Error&) {
        csv += fmt::format("{},{:.2f},{},0,,,,\n", st, pct / 100.0, b);
      }
      ser.points.push_back({pct / 100.0, 100 * overhead});
    }
    series.push_back(ser);
  }
  io::write_file_atomic(csv_path, csv);
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
      std::vector<std::string> st = {"store-all", "sqrt", "rotor", "dtr"};
      if (c.length() <= 6) st.push_back("exhaustive");
      sweep([&](const std::string& s, int64_t b) { return solve_chain(c, s, b, a.slots); }, st,
            reference, a.sweep, a.chain);
      return;
    }
    if (a.budget.empty()) throw Error("", "--budget", "is required");
    print(solve_chain(c, a.strategy, parse_budget(a.budget, reference), a.slots), reference, a.json,
          c.length());
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
    print(solved_tiled(m, so, t), t.untiled_peak_bytes, a.json, 0);
    return;
  }
  so.lower.train = true;
  const GpuDesc g = load_gpu(a.gpu);
  const TrainingScheduler ts(m, g, so);
  const int64_t reference = ts.store_all_peak();
  if (!a.sweep.empty()) {
    std::vector<std::string> strategies = {"store-all", "sqrt", "rotor", "dtr"};
    if (find_tiled_segment(m, true)) strategies.push_back("tiled");
    sweep(
        [&](const std::string& s, int64_t b) {
          return s == "tiled" ? solved_tiled(m, so, schedule_tiled(m, g, so, b, std::nullopt))
                              : solve_model(ts, *parse_strategy(s), b);
        },
        strategies, reference, a.sweep, m.name + " training step");
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
