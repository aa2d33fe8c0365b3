// The tiling planner (DESIGN.md 5.2): the region every value of a tile needs, derived
// backwards from the tile (per axis where it can, in 2D where it must), and what tiles cost:
// their peak working set, forward or training, and the recompute of their halos.
#include "schedules/tiling.hpp"

#include "schedules/tiling_detail.hpp"

#include <algorithm>
#include <limits>
#include <optional>
#include <stdexcept>
#include <utility>

namespace kiln::sched {

using namespace detail;

namespace {

int64_t pixel_bytes(const Segment& s, int v) {
  if (v < 0) return s.in_channels * s.element_bytes;
  return s.ops[size_t(v)].channels * s.ops[size_t(v)].element_bytes;
}
int64_t full_bytes(const Segment& s, int v) {
  return value_side(s, v, 0) * value_side(s, v, 1) * pixel_bytes(s, v);
}

// The region rule on one axis.
Range need_axis(const Window& w, Range out, int64_t n) {
  if (out.empty()) return {};
  const int64_t lo = std::max<int64_t>(out.lo * w.stride - w.padding, 0);
  const int64_t hi =
      std::min<int64_t>((out.hi - 1) * w.stride - w.padding + (w.kernel - 1) * w.dilation + 1, n);
  if (lo >= hi) return {};
  return {lo, hi};
}

Region make_region(Range h, Range w) {
  if (h.empty() || w.empty()) return {};
  return {h, w};
}

} // namespace

std::vector<char> detail::on_path(const Segment& s) {
  std::vector<char> path(s.ops.size(), 0);
  path[size_t(s.output)] = 1;
  for (int i = s.output; i >= 0; --i)
    if (path[size_t(i)])
      for (int v : s.ops[size_t(i)].inputs)
        if (v >= 0) path[size_t(v)] = 1;
  return path;
}

namespace {

void plan_tile_2d(const Segment& s, const Region& out, Values& vals) {
  std::fill(vals.begin(), vals.end(), Region{});
  vals[size_t(s.output) + 1] = out;
  for (int i = s.output; i >= 0; --i) {
    const Region r = vals[size_t(i) + 1];
    if (r.empty()) continue;
    const SegOp& op = s.ops[size_t(i)];
    for (int v : op.inputs) {
      const Region need = make_region(need_axis(op.window[0], r.h, value_side(s, v, 0)),
                                      need_axis(op.window[1], r.w, value_side(s, v, 1)));
      vals[size_t(v) + 1] = hull(vals[size_t(v) + 1], need);
    }
  }
}

} // namespace

AxisPlan detail::plan_axis(const Segment& s, const std::vector<char>& path, int axis,
                           std::vector<int64_t> bounds) {
  AxisPlan p;
  p.bounds = std::move(bounds);
  const size_t nv = s.ops.size() + 1, tiles = p.bounds.size() - 1;
  p.ranges.assign(tiles * nv, Range{});
  for (size_t t = 0; t < tiles; ++t) {
    Range* r = &p.ranges[t * nv];
    r[size_t(s.output) + 1] = {p.bounds[t], p.bounds[t + 1]};
    for (int i = s.output; i >= 0; --i) {
      if (!path[size_t(i)]) continue;
      const Range out = r[size_t(i) + 1];
      if (out.empty()) {
        p.clean = false;
        continue;
      }
      const SegOp& op = s.ops[size_t(i)];
      for (int v : op.inputs)
        r[size_t(v) + 1] =
            hull(r[size_t(v) + 1], need_axis(op.window[size_t(axis)], out, value_side(s, v, axis)));
    }
    if (r[0].empty()) p.clean = false;
  }
  return p;
}

std::vector<int64_t> detail::even_bounds(int64_t n, int64_t tiles) {
  std::vector<int64_t> b{0};
  const int64_t q = n / tiles, rem = n % tiles;
  for (int64_t t = 0; t < tiles; ++t)
    b.push_back(b.back() + q + (t < rem ? 1 : 0));
  return b;
}

namespace {

void fill_tile(const Segment& s, const AxisPlan& h, const AxisPlan& w, size_t i, size_t j,
               Values& vals) {
  if (h.clean && w.clean) {
    const size_t nv = s.ops.size() + 1;
    for (size_t v = 0; v < nv; ++v)
      vals[v] = make_region(h.ranges[i * nv + v], w.ranges[j * nv + v]);
  } else {
    plan_tile_2d(s, {{h.bounds[i], h.bounds[i + 1]}, {w.bounds[j], w.bounds[j + 1]}}, vals);
  }
}

int64_t region_bytes(const Segment& s, const Values& vals, int v) {
  return vals[size_t(v) + 1].area() * pixel_bytes(s, v);
}

struct TileBytes {
  int64_t forward_peak = 0; // the TileCost liveness
};

TileBytes tile_bytes(const Segment& s, const Values& vals, std::vector<int>& last) {
  const int n = int(s.ops.size());
  std::fill(last.begin(), last.end(), -1); // last[v + 1]: its last consumer in this tile
  for (int i = 0; i < n; ++i)
    if (!vals[size_t(i) + 1].empty())
      for (int v : s.ops[size_t(i)].inputs)
        last[size_t(v) + 1] = i;
  TileBytes b;
  int64_t live = region_bytes(s, vals, -1);
  b.forward_peak = live;
  for (int i = 0; i < n; ++i) {
    if (vals[size_t(i) + 1].empty()) continue;
    const int64_t bytes = region_bytes(s, vals, i);
    live += bytes;
    b.forward_peak = std::max(b.forward_peak, live);
    for (int v : s.ops[size_t(i)].inputs)
      if (v >= 0 && v != s.output && last[size_t(v) + 1] == i) {
        live -= region_bytes(s, vals, v);
        last[size_t(v) + 1] = -2; // freed (an input listed twice is freed once)
      }
  }
  return b;
}

// The training working set of one tile (see tile_train_peak): every buffer as an interval of
// steps (the forward of each computing op, then the backward of each op with a gradient),
// summed with a difference array.
int64_t tile_train_bytes(const Segment& s, const Values& vals) {
  const int n = int(s.ops.size());
  auto computes = [&](int i) { return !vals[size_t(i) + 1].empty(); };
  auto bytes = [&](int v) { return region_bytes(s, vals, v); };
  std::vector<int> readers(size_t(n) + 1, 0), sole(size_t(n) + 1, -1); // [v + 1]
  std::vector<int> fwd(size_t(n), -1), bwd(size_t(n), -1);
  int steps = 0;
  for (int i = 0; i < n; ++i)
    if (computes(i)) {
      fwd[size_t(i)] = steps++;
      for (int v : s.ops[size_t(i)].inputs)
        ++readers[size_t(v) + 1], sole[size_t(v) + 1] = i;
    }
  std::vector<char> has_grad(size_t(n), 0);
  has_grad[size_t(s.output)] = 1;
  for (int i = n - 1; i >= 0; --i)
    if (computes(i) && has_grad[size_t(i)]) {
      bwd[size_t(i)] = steps++;
      for (int v : s.ops[size_t(i)].inputs)
        if (v >= 0) has_grad[size_t(v)] = 1;
    }
  // Per value: its last forward reader and its first gradient contribution.
  std::vector<int> last_read(size_t(n), -1), first_grad(size_t(n), steps);
  for (int c = 0; c < n; ++c)
    if (computes(c))
      for (int v : s.ops[size_t(c)].inputs)
        if (v >= 0) {
          last_read[size_t(v)] = std::max(last_read[size_t(v)], fwd[size_t(c)]);
          if (bwd[size_t(c)] >= 0)
            first_grad[size_t(v)] = std::min(first_grad[size_t(v)], bwd[size_t(c)]);
        }
  std::vector<int64_t> diff(size_t(steps) + 1, 0);
  auto live = [&](int from, int to, int64_t b) {
    diff[size_t(from)] += b, diff[size_t(to) + 1] -= b;
  };
  auto copied = [&](int v) { return v < 0 || readers[size_t(v) + 1] > 1; };
  for (int i = 0; i < n; ++i) {
    if (!computes(i)) continue;
    const SegOp& op = s.ops[size_t(i)];
    const int f = fwd[size_t(i)], b = bwd[size_t(i)];
    // Its value: read by its consumers' forwards (copied there when several read it), by its
    // own backward, by its sole consumer's backward.
    int last = std::max(f, last_read[size_t(i)]);
    if (op.backward_reads_output && b >= 0) last = std::max(last, b);
    const int c = sole[size_t(i) + 1];
    if (!copied(i) && c >= 0 && s.ops[size_t(c)].backward_reads_input && bwd[size_t(c)] >= 0)
      last = std::max(last, bwd[size_t(c)]);
    live(f, last, bytes(i));
    for (int v : op.inputs) // its windows of copied inputs
      if (copied(v)) live(f, op.backward_reads_input && b >= 0 ? b : f, bytes(v));
    if (b < 0) continue;
    live(std::min(b, first_grad[size_t(i)]), b, bytes(i)); // its gradient
    int64_t temp = 0;
    for (int v : op.inputs)
      if (v >= 0) temp = std::max(temp, bytes(v));
    live(b, b, temp);
  }
  int64_t cur = 0, peak = 0;
  for (int k = 0; k < steps; ++k)
    peak = std::max(peak, cur += diff[size_t(k)]);
  return peak;
}

int64_t tile_figure(const Segment& s, const Values& vals, const TileBytes& b, bool train) {
  return train ? tile_train_bytes(s, vals) : b.forward_peak;
}

// Visit order of one axis's tiles: an interior tile first (it carries halos on both sides, so
// it is the likely peak and lets an over-budget grid stop early), then the rest.
std::vector<size_t> visit_order(size_t tiles) {
  std::vector<size_t> order;
  const size_t first = std::min<size_t>(1, tiles - 1);
  order.push_back(first);
  for (size_t t = 0; t < tiles; ++t)
    if (t != first) order.push_back(t);
  return order;
}

void check_tiling(const Segment& s, const Tiling& t) {
  s.validate();
  const SegOp& out = s.ops[size_t(s.output)];
  t.validate(out.out_h, out.out_w);
}

} // namespace

int64_t detail::grid_peak(const Segment& s, const AxisPlan& h, const AxisPlan& w, bool train,
                          int64_t abort_above) {
  Values vals(s.ops.size() + 1);
  std::vector<int> last(s.ops.size() + 1);
  int64_t peak = 0;
  for (size_t i : visit_order(h.bounds.size() - 1))
    for (size_t j : visit_order(w.bounds.size() - 1)) {
      fill_tile(s, h, w, i, j, vals);
      const int64_t f = tile_figure(s, vals, tile_bytes(s, vals, last), train);
      if (f > abort_above) return f;
      peak = std::max(peak, f);
    }
  return peak;
}

Region needed_input(const SegOp& op, int input_index, const Region& out, int64_t in_h,
                    int64_t in_w) {
  const std::string place = "needed_input: op '" + op.name + "'";
  check_window(place, "window h ", op.window[0]);
  check_window(place, "window w ", op.window[1]);
  if (input_index < 0 || input_index >= int(op.inputs.size()))
    throw std::invalid_argument(place + ": input index " + std::to_string(input_index) +
                                " out of range");
  check_range(place, "in_h", in_h, 0, kMaxSide, "2^31");
  check_range(place, "in_w", in_w, 0, kMaxSide, "2^31");
  if (!contains({{0, op.out_h}, {0, op.out_w}}, out))
    throw std::invalid_argument(place + ": region " + to_string(out) + " is outside its " +
                                std::to_string(op.out_h) + "x" + std::to_string(op.out_w) +
                                " output");
  return make_region(need_axis(op.window[0], out.h, in_h), need_axis(op.window[1], out.w, in_w));
}

std::vector<TilePlan> plan_tiles(const Segment& s, const Tiling& t) {
  check_tiling(s, t);
  const std::vector<char> path = on_path(s);
  const AxisPlan h = plan_axis(s, path, 0, t.h_bounds), w = plan_axis(s, path, 1, t.w_bounds);
  Values vals(s.ops.size() + 1);
  std::vector<TilePlan> plans;
  plans.reserve(size_t(t.count()));
  for (int i = 0; i < t.rows(); ++i)
    for (int j = 0; j < t.cols(); ++j) {
      fill_tile(s, h, w, size_t(i), size_t(j), vals);
      plans.push_back({t.tile(i, j), std::vector<Region>(vals.begin() + 1, vals.end()), vals[0]});
    }
  return plans;
}

TileCost tile_cost(const Segment& s, const Tiling& t) {
  check_tiling(s, t);
  const std::vector<char> path = on_path(s);
  const AxisPlan h = plan_axis(s, path, 0, t.h_bounds), w = plan_axis(s, path, 1, t.w_bounds);
  const size_t n = s.ops.size();
  Values vals(n + 1);
  std::vector<int> last(n + 1);
  std::vector<double> area_sum(n, 0);
  TileCost c;
  c.peak_bytes = -1;
  for (int i = 0; i < t.rows(); ++i)
    for (int j = 0; j < t.cols(); ++j) {
      fill_tile(s, h, w, size_t(i), size_t(j), vals);
      const int64_t peak = tile_bytes(s, vals, last).forward_peak;
      if (peak > c.peak_bytes) c.peak_bytes = peak, c.peak_tile = i * t.cols() + j;
      for (size_t k = 0; k < n; ++k)
        area_sum[k] += double(vals[k + 1].area());
    }
  c.op_recompute.assign(n, 0);
  double work = 0, weighted = 0;
  for (size_t k = 0; k < n; ++k) {
    const SegOp& op = s.ops[k];
    const double full = double(op.out_h) * double(op.out_w);
    c.op_recompute[k] = area_sum[k] / full;
    if (!path[k]) continue;
    const double wk = full * double(op.channels);
    work += wk;
    weighted += wk * c.op_recompute[k];
  }
  c.recompute_factor = weighted / work;
  return c;
}

int64_t tile_train_peak(const Segment& s, const Tiling& t) {
  check_tiling(s, t);
  const std::vector<char> path = on_path(s);
  const AxisPlan h = plan_axis(s, path, 0, t.h_bounds), w = plan_axis(s, path, 1, t.w_bounds);
  return grid_peak(s, h, w, true, std::numeric_limits<int64_t>::max());
}

int64_t resident_bytes(const Segment& s) {
  s.validate();
  return full_bytes(s, -1) + full_bytes(s, s.output);
}

int64_t tiled_peak(const Segment& s, const Tiling& t, bool train) {
  return resident_bytes(s) + (train ? tile_train_peak(s, t) : tile_cost(s, t).peak_bytes);
}

int64_t untiled_peak(const Segment& s, bool train) {
  s.validate();
  const SegOp& out = s.ops[size_t(s.output)];
  return tiled_peak(s, even_tiling(out.out_h, out.out_w, 1, 1), train);
}

} // namespace kiln::sched
