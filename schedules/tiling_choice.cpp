// The tiling planner's grid search: the fewest even tiles whose peak fits a budget.
#include "schedules/infeasible.hpp"
#include "schedules/tiling.hpp"
#include "schedules/tiling_detail.hpp"

#include <algorithm>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace kiln::sched {

using namespace detail;

namespace {

// p/q < r/t for positive q and t, exactly (continued fractions).
bool fraction_less(uint64_t p, uint64_t q, uint64_t r, uint64_t t) {
  for (;;) {
    if (p / q != r / t) return p / q < r / t;
    p %= q;
    r %= t;
    if (r == 0) return false; // p/q >= r/t
    if (p == 0) return true;
    // p/q < r/t  <=>  t/r < q/p
    std::swap(p, t);
    std::swap(q, r);
  }
}

// Grids by increasing count, the first that fits; with `floor`, Infeasible (with the
// smallest peak over all grids) when none does, else nothing.
std::optional<Tiling> search_grids(const Segment& s, int64_t budget_bytes, bool train,
                                   int max_per_axis, bool floor) {
  s.validate();
  if (max_per_axis < 1 || max_per_axis > 1024)
    throw std::invalid_argument("choose_tiling: max_per_axis must be in [1, 1024], got " +
                                std::to_string(max_per_axis));
  const SegOp& out = s.ops[size_t(s.output)];
  const int64_t out_h = out.out_h, out_w = out.out_w;
  const int rows = int(std::min<int64_t>(max_per_axis, out_h));
  const int cols = int(std::min<int64_t>(max_per_axis, out_w));
  struct Grid {
    int r, c;
  };
  std::vector<Grid> grids;
  for (int r = 1; r <= rows; ++r)
    for (int c = 1; c <= cols; ++c)
      grids.push_back({r, c});
  // Tile aspect out_h/r : out_w/c, compared as max(a, b) / min(a, b) with a = out_h * c and
  // b = out_w * r (below 2^41, compared exactly as fractions).
  auto aspect_less = [&](const Grid& x, const Grid& y) {
    const uint64_t xa = uint64_t(out_h) * uint64_t(x.c), xb = uint64_t(out_w) * uint64_t(x.r);
    const uint64_t ya = uint64_t(out_h) * uint64_t(y.c), yb = uint64_t(out_w) * uint64_t(y.r);
    return fraction_less(std::max(xa, xb), std::min(xa, xb), std::max(ya, yb), std::min(ya, yb));
  };
  std::sort(grids.begin(), grids.end(), [&](const Grid& x, const Grid& y) {
    if (x.r * x.c != y.r * y.c) return x.r * x.c < y.r * y.c;
    if (aspect_less(x, y)) return true;
    if (aspect_less(y, x)) return false;
    return x.r > y.r;
  });

  const std::vector<char> path = on_path(s);
  std::vector<std::optional<AxisPlan>> hplans(size_t(rows) + 1), wplans(size_t(cols) + 1);
  auto peak_of = [&](const Grid& g, int64_t abort_above) {
    auto& h = hplans[size_t(g.r)];
    if (!h) h = plan_axis(s, path, 0, even_bounds(out_h, g.r));
    auto& w = wplans[size_t(g.c)];
    if (!w) w = plan_axis(s, path, 1, even_bounds(out_w, g.c));
    return grid_peak(s, *h, *w, train, abort_above);
  };

  const int64_t resident = resident_bytes(s);
  const int64_t left = budget_bytes - resident;
  if (left >= 0)
    for (const Grid& g : grids)
      if (peak_of(g, left) <= left) return even_tiling(out_h, out_w, g.r, g.c);

  if (!floor) return std::nullopt;
  // None fits: the smallest peak over all grids, most tiles first (likely the smallest, so
  // the other grids stop at their first tile above it).
  int64_t best = std::numeric_limits<int64_t>::max();
  Grid best_grid{rows, cols};
  for (auto g = grids.rbegin(); g != grids.rend(); ++g) {
    const int64_t p = peak_of(*g, best - 1);
    if (p < best) best = p, best_grid = *g;
  }
  const int64_t least = resident + best;
  throw Infeasible("tiling: no grid of up to " + std::to_string(rows) + "x" + std::to_string(cols) +
                       " tiles fits " + std::to_string(budget_bytes) + " bytes" +
                       (train ? " in training" : "") + "; the smallest feasible budget is " +
                       std::to_string(least) + " bytes (" + std::to_string(best_grid.r) + "x" +
                       std::to_string(best_grid.c) + " tiles)",
                   least);
}

} // namespace

Tiling choose_tiling(const Segment& s, int64_t budget_bytes, bool train, int max_per_axis) {
  return *search_grids(s, budget_bytes, train, max_per_axis, true);
}

std::optional<Tiling> fewest_tiles(const Segment& s, int64_t budget_bytes, bool train,
                                   int max_per_axis) {
  return search_grids(s, budget_bytes, train, max_per_axis, false);
}

} // namespace kiln::sched
