// Inside the tiling planner: per-axis tile regions and the per-grid peak, shared by its cost
// model (tiling.cpp) and its grid search (tiling_choice.cpp). Not part of the interface.
#pragma once

#include "schedules/tiling.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::sched::detail {

// The largest side of a value (rows or columns) a segment may have.
inline constexpr int64_t kMaxSide = int64_t(1) << 31;

// The checks both the segment's validation and the planner's entry points make: a field in
// [lo, hi], a window's fields; std::invalid_argument naming `place` otherwise.
void check_range(const std::string& place, const std::string& field, int64_t v, int64_t lo,
                 int64_t hi, const char* hi_text);
void check_window(const std::string& place, const std::string& prefix, const Window& w);

// Value v: -1 is the segment input, else op v. Sizes of a validated segment.
int64_t value_side(const Segment& s, int v, int axis);

// The smallest range holding both (empty ranges hold nothing).
Range hull(Range a, Range b);

// Regions of one tile: vals[0] is the segment input, vals[i + 1] op i.
using Values = std::vector<Region>;

// The region rule applied on one axis alone, for every tile of that axis. When no value on a
// path to the output is empty on this axis in any tile (`clean`), and the other axis is clean
// too, a tile's regions are the products of the two axes' intervals: every consumer is
// non-empty, so the bounding union of products is the product of the per-axis unions.
// Otherwise tiles are planned in 2D.
struct AxisPlan {
  std::vector<int64_t> bounds;
  std::vector<Range> ranges; // ranges[t * (ops + 1) + v + 1]
  bool clean = true;
};

// Ops from which the output is reachable (the output included).
std::vector<char> on_path(const Segment& s);
AxisPlan plan_axis(const Segment& s, const std::vector<char>& path, int axis,
                   std::vector<int64_t> bounds);
// n split into `tiles` near-equal parts, the larger first.
std::vector<int64_t> even_bounds(int64_t n, int64_t tiles);

// Max over the tiles of the grid of the per-tile peak (training or forward). Stops at the
// first tile above abort_above and returns that tile's figure (then only "> abort_above" is
// meaningful).
int64_t grid_peak(const Segment& s, const AxisPlan& h, const AxisPlan& w, bool train,
                  int64_t abort_above);

} // namespace kiln::sched::detail
