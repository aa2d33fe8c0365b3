#include "generator/schedule/tiled_strategy.hpp"

#include "generator/lower/lower.hpp"
#include "generator/lower/plan_builder.hpp"
#include "generator/schedule/budget.hpp"
#include "runtime/error.hpp"
#include "schedules/infeasible.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fmt/format.h>
#include <limits>

namespace kiln {

namespace {

constexpr int64_t kUnlimited = std::numeric_limits<int64_t>::max();
constexpr int kMaxPlans = 24;             // whole-model plans per candidate segment, each way
constexpr int kMaxTotalPlans = 96;        // over all candidates
constexpr int64_t kMaxTileLayers = 40000; // tiles x segment layers of a plan worth building

std::string mib(int64_t b) {
  return fmt::format("{} bytes ({:.1f} MiB)", b, double(b) / 1048576.0);
}

double forward_time(const Model& m, const std::vector<LayerTimes>& t, const TiledSegment* seg) {
  double us = 0;
  for (size_t i = 0; i < m.nodes.size(); ++i)
    if (!(seg && seg->contains(int(i)))) us += t[i].forward_us;
  if (seg) us += tiled_segment_times(*seg, t).forward_us;
  return us;
}

// A step's predicted time without building its plan: the segment tiled as given, every
// other layer once (training: forward and backward, as under store-all).
double estimated_time(const Model& m, const std::vector<LayerTimes>& t, const TiledSegment& seg,
                      bool train) {
  if (!train) return forward_time(m, t, &seg);
  double us = 0;
  for (size_t i = 0; i < m.nodes.size(); ++i)
    if (!seg.contains(int(i))) us += t[i].forward_us + t[i].backward_us;
  const SegmentTimes st = tiled_segment_times(seg, t);
  return us + st.forward_us + st.backward_us;
}

// What every plan of one solve shares.
struct Context {
  const Model& m;
  const GpuDesc& g;
  const ScheduleOptions& o;
  std::vector<LayerTimes> layers;
  // The planner counts the segment input as resident; in a plan the model input is a
  // persistent buffer, not an activation: the planner's target is the budget plus it.
  int64_t input_bytes;
};

// One tiling planned into a whole plan and measured.
struct Attempt {
  bool feasible = true;   // the rest of the network found a schedule
  int64_t need_bytes = 0; // the plan's peak, or the rest's smallest feasible budget
  TiledSchedule result;
};

Attempt attempt(const Context& c, const TiledSegment& seg, int64_t budget) {
  const Model& m = c.m;
  const std::vector<LayerTimes>& layers = c.layers;
  Attempt a;
  TiledSchedule& r = a.result;
  r.segment = seg;
  r.train = c.o.lower.train;
  LowerOptions lo = c.o.lower;
  lo.tiled = &r.segment;
  r.recompute_factor = tiled_segment_times(seg, layers).recompute_factor;
  if (!lo.train) {
    r.steps = lower_model_steps(m, lo);
    r.time_us = forward_time(m, layers, &r.segment);
  } else {
    ScheduleOptions so = c.o;
    so.lower = lo;
    const TrainingScheduler ts(m, c.g, so);
    TrainingSchedule s;
    try {
      s = ts.try_solve(Strategy::store_all, budget);
    } catch (const sched::Infeasible&) {
      try {
        s = ts.try_solve(Strategy::rotor, budget);
      } catch (const sched::Infeasible& e) {
        a.feasible = false;
        a.need_bytes = e.min_feasible_bytes;
        return a;
      }
    }
    r.rest = std::string(strategy_name(s.strategy));
    r.ops = s.ops;
    r.predicted_peak_bytes = s.peak_bytes;
    r.time_us = s.time_us;
    r.steps = ts.graph().lower(s.order);
  }
  r.peak_bytes = plan_transient_peak(finish_plan(r.steps));
  if (!lo.train) r.predicted_peak_bytes = r.peak_bytes;
  a.need_bytes = r.peak_bytes;
  return a;
}

std::string grid(const sched::Tiling& t) { return fmt::format("{}x{}", t.rows(), t.cols()); }

// Where a segment is worth ending: at each resolution, the first place it may end (right
// after the image shrank: what follows is smaller and may run untiled) and the last (the
// most layers tiled before it shrinks again), and the longest; longest first.
std::vector<int> candidate_ends(const Model& m, bool train) {
  const std::vector<int> ends = tiled_segment_ends(m, train);
  auto pixels = [&](int k) { return m.nodes[size_t(k)].shape[2] * m.nodes[size_t(k)].shape[3]; };
  std::vector<int> out;
  for (size_t i = 0; i < ends.size(); ++i) {
    const bool first = i == 0 || pixels(ends[i - 1]) != pixels(ends[i]);
    const bool last = i + 1 == ends.size() || pixels(ends[i + 1]) != pixels(ends[i]);
    if (first || last) out.push_back(ends[i]);
  }
  std::reverse(out.begin(), out.end());
  return out;
}

// The fewest tiles of one segment whose whole plan measures within the budget.
struct Search {
  std::optional<Attempt> fit;
  int tried = 0;
  int64_t least_need = kUnlimited; // without a fit: the least any plan tried needed
  std::string least_grid;
};

// `first`: the planner's proposal for the budget, when the caller has it.
Search search_tiles(const Context& c, TiledSegment& seg, int64_t budget,
                    std::optional<sched::Tiling> first) {
  const bool train = c.o.lower.train;
  Search r;
  auto fits = [&](const Attempt& a) { return a.feasible && a.need_bytes <= budget; };
  // Plans past this many tile-layers are not built: launches would dominate the step.
  auto too_many = [&](const sched::Tiling& t) {
    return int64_t(t.count()) * int64_t(seg.nodes.size()) > kMaxTileLayers;
  };
  auto try_tiling = [&](const sched::Tiling& t) {
    seg.tiling = t;
    seg.tiles = sched::plan_tiles(seg.problem, seg.tiling);
    ++r.tried;
    Attempt a = attempt(c, seg, budget);
    if (a.need_bytes < r.least_need) r.least_need = a.need_bytes, r.least_grid = grid(t) + " tiles";
    return a;
  };
  int64_t target = budget + c.input_bytes;
  // Down: tighten the planner's target until the measured plan fits.
  int last_count = 0;
  while (r.tried < kMaxPlans) {
    const std::optional<sched::Tiling> t =
        r.tried == 0 && first ? first : sched::fewest_tiles(seg.problem, target, train);
    if (!t || too_many(*t)) break;
    Attempt a = try_tiling(*t);
    last_count = t->count();
    if (fits(a)) {
      r.fit = std::move(a);
      break;
    }
    // Ask the planner for a tiling needing at least the overshoot less, and never this one again.
    const int64_t over = a.need_bytes - budget;
    target = std::min(target - over, sched::tiled_peak(seg.problem, seg.tiling, train) - 1);
  }
  if (!r.fit) {
    // The planner sees nothing tighter (it may under-estimate what a plan adds): double the
    // tiles, squarest grid, while the cap allows (its own floor would cost a scan of every
    // tile of every grid).
    const sched::SegOp& out = seg.problem.ops[size_t(seg.problem.output)];
    for (int64_t count = std::max(2, 2 * last_count); r.tried < kMaxPlans; count *= 2) {
      const int64_t rows = std::clamp<int64_t>(
          std::llround(std::sqrt(double(count) * double(out.out_h) / double(out.out_w))), 1,
          out.out_h);
      const int64_t cols = std::clamp<int64_t>((count + rows - 1) / rows, 1, out.out_w);
      const sched::Tiling t = sched::even_tiling(out.out_h, out.out_w, rows, cols);
      if (t.count() <= last_count || too_many(t)) break;
      Attempt a = try_tiling(t);
      last_count = t.count();
      if (fits(a)) {
        r.fit = std::move(a);
        break;
      }
    }
    return r;
  }
  // Up: the planner over-estimates what a plan keeps live (the executor frees values the
  // planner holds to the tile's end, and the rest of the network may be far below the
  // budget), so bisect its target toward fewer tiles, keeping only measured fits.
  int64_t lo = target, hi = sched::untiled_peak(seg.problem, train);
  while (r.tried < 2 * kMaxPlans && r.fit->result.segment.tiling.count() > 1 &&
         hi - lo > budget / 64) {
    const int64_t mid = lo + (hi - lo) / 2;
    const std::optional<sched::Tiling> t = sched::fewest_tiles(seg.problem, mid, train);
    if (!t || t->count() >= r.fit->result.segment.tiling.count()) {
      lo = mid;
      continue;
    }
    Attempt up = try_tiling(*t);
    if (fits(up))
      r.fit = std::move(up), lo = mid;
    else
      hi = mid;
  }
  return r;
}
} // namespace

std::string TiledSchedule::tiles() const { return grid(segment.tiling); }

UntiledReference untiled_reference(const Model& m, const GpuDesc& g, const ScheduleOptions& o) {
  UntiledReference r;
  if (o.lower.train) {
    ScheduleOptions so = o;
    so.lower.tiled = nullptr;
    const TrainingScheduler ts(m, g, so);
    r.peak_bytes = ts.store_all_peak();
    r.time_us = ts.solve(Strategy::store_all, kUnlimited).time_us;
  } else {
    LowerOptions lo = o.lower;
    lo.tiled = nullptr;
    r.peak_bytes = plan_transient_peak(lower_model(m, lo));
    r.time_us = forward_time(m, layer_times(m, g, o.profile), nullptr);
  }
  return r;
}

namespace {

TiledSchedule solve(const Model& m, const GpuDesc& g, const ScheduleOptions& o,
                    const UntiledReference& ref, std::optional<int64_t> budget,
                    std::optional<std::pair<int64_t, int64_t>> tiles,
                    std::chrono::steady_clock::time_point t0) {
  const bool train = o.lower.train;
  std::optional<TiledSegment> found = find_tiled_segment(m, train);
  if (!found)
    throw Error(m.file, "--schedule tiled",
                cat("\"", m.name,
                    "\" starts with no layer that can run tile by tile (conv2d, relu, max or "
                    "average pooling, add",
                    train ? "" : ", batchnorm", ")"));
  TiledSegment seg = std::move(*found);
  const Context c{m, g, o, layer_times(m, g, o.profile),
                  numel(m.input_shape) * int64_t(dtype_size(m.dtype))};
  const int64_t limit = budget ? *budget : kUnlimited;
  auto finish = [&](Attempt a, int tried) {
    a.result.budget_bytes = budget ? *budget : -1;
    a.result.plans_tried = tried;
    a.result.untiled_time_us = ref.time_us;
    a.result.untiled_peak_bytes = ref.peak_bytes;
    a.result.solve_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return std::move(a.result);
  };

  if (tiles) {
    tile_evenly(seg, tiles->first, tiles->second);
    Attempt a = attempt(c, seg, limit);
    if (!a.feasible || a.need_bytes > limit)
      throw Error("", "--tiles",
                  cat(grid(seg.tiling), " tiles need ", mib(a.need_bytes),
                      " of live activations; the budget is ", mib(limit),
                      " (give more tiles, a larger --budget, or leave --tiles out to choose)"));
    return finish(std::move(a), 1);
  }
  if (!budget)
    throw Error("", "--budget", "the tiled strategy needs a --budget (or a forced --tiles RxC)");

  // Candidates ranked by the time of the planner's proposal (no plan built), then searched
  // in that order for their fewest measured-fitting tiles until the next one's estimate is
  // slower than the best found; the fastest predicted step wins (the longer on ties).
  struct Ranked {
    TiledSegment seg;
    std::optional<sched::Tiling> proposal; // the planner's, for the budget
    double estimate;
  };
  std::vector<Ranked> ranked;
  for (int end : candidate_ends(m, train)) {
    Ranked r{tiled_segment_to(m, end), std::nullopt, std::numeric_limits<double>::infinity()};
    // Where the planner sees no fit, last (its search may still find one in measured plans).
    r.proposal = sched::fewest_tiles(r.seg.problem, *budget + c.input_bytes, train);
    if (r.proposal) {
      r.seg.tiling = *r.proposal;
      r.estimate = estimated_time(m, c.layers, r.seg, train);
    }
    ranked.push_back(std::move(r));
  }
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const Ranked& x, const Ranked& y) { return x.estimate < y.estimate; });
  std::optional<Attempt> best;
  int tried = 0, searched = 0;
  int64_t least_need = kUnlimited;
  std::string least_grid;
  for (Ranked& cand : ranked) {
    // Enough: the rest are predicted slower than the best measured fit (estimates ascend), or
    // the plan count is spent.
    if ((best && cand.estimate > best->result.time_us) || tried >= kMaxTotalPlans) break;
    const Search r = search_tiles(c, cand.seg, *budget, cand.proposal);
    tried += r.tried;
    ++searched;
    if (!r.fit) {
      if (r.least_need < least_need) least_need = r.least_need, least_grid = r.least_grid;
      continue;
    }
    const bool longer = best && cand.seg.nodes.size() > best->result.segment.nodes.size();
    const double t = r.fit->result.time_us, bt = best ? best->result.time_us : 0;
    if (!best || t < bt * (1 - 1e-9) || (t <= bt * (1 + 1e-9) && longer)) best = std::move(r.fit);
  }
  if (!best)
    throw Error("", "--budget",
                cat("no tiling fits ", mib(*budget),
                    " of live activations; the smallest feasible budget is about ", mib(least_need),
                    " (", least_grid, ")"));
  best->result.segments_tried = searched;
  best->result.segment_candidates = int(ranked.size());
  return finish(std::move(*best), tried);
}

} // namespace

TiledSchedule schedule_tiled(const Model& m, const GpuDesc& g, const ScheduleOptions& o,
                             std::optional<int64_t> budget,
                             std::optional<std::pair<int64_t, int64_t>> tiles) {
  const auto t0 = std::chrono::steady_clock::now();
  return solve(m, g, o, untiled_reference(m, g, o), budget, tiles, t0);
}

TiledSchedule schedule_tiled(const Model& m, const GpuDesc& g, const ScheduleOptions& o,
                             const std::string& budget, const std::string& tiles) {
  const auto t0 = std::chrono::steady_clock::now();
  const UntiledReference ref = untiled_reference(m, g, o);
  std::optional<int64_t> b;
  if (!budget.empty()) b = parse_budget(budget, ref.peak_bytes);
  std::optional<std::pair<int64_t, int64_t>> t;
  if (!tiles.empty()) t = parse_tiles(tiles);
  return solve(m, g, o, ref, b, t, t0);
}

} // namespace kiln
