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

constexpr int64_t kMaxSide = int64_t(1) << 31;
constexpr int64_t kMaxWindowField = int64_t(1) << 24;
constexpr int64_t kMaxElementBytes = 1024;
constexpr int64_t kMaxSegmentBytes = int64_t(1) << 60;
constexpr size_t kMaxOps = 1000000;

std::string op_place(const Segment& s, size_t i) {
  std::string p = "segment op " + std::to_string(i);
  if (!s.ops[i].name.empty()) p += " '" + s.ops[i].name + "'";
  return p;
}

void check_range(const std::string& place, const std::string& field, int64_t v, int64_t lo,
                 int64_t hi, const char* hi_text) {
  if (v < lo || v > hi)
    throw std::invalid_argument(place + ": " + field + " must be in [" + std::to_string(lo) + ", " +
                                hi_text + "], got " + std::to_string(v));
}

void check_window(const std::string& place, const std::string& a, const Window& w) {
  check_range(place, a + "kernel", w.kernel, 1, kMaxWindowField, "2^24");
  check_range(place, a + "stride", w.stride, 1, kMaxWindowField, "2^24");
  check_range(place, a + "padding", w.padding, 0, kMaxWindowField, "2^24");
  check_range(place, a + "dilation", w.dilation, 1, kMaxWindowField, "2^24");
}

// a * b for a, b >= 0, or -1 when it exceeds cap.
int64_t mul_capped(int64_t a, int64_t b, int64_t cap) {
  if (a == 0 || b == 0) return 0;
  if (a > cap / b) return -1;
  return a * b;
}

// Value v: -1 is the segment input, else op v. Sizes of a validated segment.
int64_t value_side(const Segment& s, int v, int axis) {
  if (v < 0) return axis == 0 ? s.in_h : s.in_w;
  return axis == 0 ? s.ops[size_t(v)].out_h : s.ops[size_t(v)].out_w;
}
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

Range hull(Range a, Range b) {
  if (a.empty()) return b.empty() ? Range{} : b;
  if (b.empty()) return a;
  return {std::min(a.lo, b.lo), std::max(a.hi, b.hi)};
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

int64_t window_out(const Window& w, int64_t n, bool ceil_mode) {
  check_window("window_out", "", w);
  check_range("window_out", "n", n, 0, kMaxSide, "2^31");
  const int64_t span = n + 2 * w.padding - w.dilation * (w.kernel - 1) - 1;
  if (span < 0) return 0;
  if (!ceil_mode) return span / w.stride + 1;
  int64_t out = (span + w.stride - 1) / w.stride + 1;
  if ((out - 1) * w.stride - w.padding >= n) --out;
  return out;
}

void Segment::validate() const {
  check_range("segment", "in_h", in_h, 1, kMaxSide, "2^31");
  check_range("segment", "in_w", in_w, 1, kMaxSide, "2^31");
  check_range("segment", "in_channels", in_channels, 1, kMaxSegmentBytes, "2^60");
  check_range("segment", "element_bytes", element_bytes, 1, kMaxElementBytes, "1024");
  if (ops.empty()) throw std::invalid_argument("segment has no ops");
  if (ops.size() > kMaxOps) throw std::invalid_argument("segment has more than 10^6 ops");
  int64_t total = mul_capped(mul_capped(in_h * in_w, in_channels, kMaxSegmentBytes), element_bytes,
                             kMaxSegmentBytes);
  if (total < 0) throw std::invalid_argument("segment: the input is larger than 2^60 bytes");
  for (size_t i = 0; i < ops.size(); ++i) {
    const SegOp& op = ops[i];
    const std::string place = op_place(*this, i);
    check_window(place, "window h ", op.window[0]);
    check_window(place, "window w ", op.window[1]);
    if (op.inputs.empty()) throw std::invalid_argument(place + ": has no inputs");
    for (int v : op.inputs)
      if (v < -1 || v >= int(i))
        throw std::invalid_argument(place + ": input " + std::to_string(v) +
                                    " is neither -1 (the segment input) nor an earlier op");
    const int64_t n_h = value_side(*this, op.inputs[0], 0);
    const int64_t n_w = value_side(*this, op.inputs[0], 1);
    for (int v : op.inputs)
      if (value_side(*this, v, 0) != n_h || value_side(*this, v, 1) != n_w)
        throw std::invalid_argument(place + ": inputs differ in size (" + std::to_string(n_h) +
                                    "x" + std::to_string(n_w) + " and " +
                                    std::to_string(value_side(*this, v, 0)) + "x" +
                                    std::to_string(value_side(*this, v, 1)) + ")");
    check_range(place, "channels", op.channels, 1, kMaxSegmentBytes, "2^60");
    check_range(place, "element_bytes", op.element_bytes, 1, kMaxElementBytes, "1024");
    check_range(place, "out_h", op.out_h, 1, kMaxSide, "2^31");
    check_range(place, "out_w", op.out_w, 1, kMaxSide, "2^31");
    for (int a = 0; a < 2; ++a) {
      const char* field = a == 0 ? "out_h" : "out_w";
      const int64_t n = a == 0 ? n_h : n_w, out = a == 0 ? op.out_h : op.out_w;
      const Window& w = op.window[size_t(a)];
      const int64_t lo = window_out(w, n, false), hi = window_out(w, n, true);
      const std::string win = "window (kernel " + std::to_string(w.kernel) + ", stride " +
                              std::to_string(w.stride) + ", padding " + std::to_string(w.padding) +
                              ", dilation " + std::to_string(w.dilation) + ")";
      if (lo < 1)
        throw std::invalid_argument(place + ": " + win + " does not fit in an input of " +
                                    std::to_string(n) + (a == 0 ? " rows" : " columns"));
      if (out != lo && out != hi)
        throw std::invalid_argument(
            place + ": " + field + " is " + std::to_string(out) + " but its " + win + " over " +
            std::to_string(n) + " gives " + std::to_string(lo) +
            (hi != lo ? " (floor mode) or " + std::to_string(hi) + " (ceil mode)" : ""));
    }
    const int64_t bytes = mul_capped(mul_capped(op.out_h * op.out_w, op.channels, kMaxSegmentBytes),
                                     op.element_bytes, kMaxSegmentBytes);
    if (bytes < 0 || (total += bytes) > kMaxSegmentBytes)
      throw std::invalid_argument(place + ": the segment's tensors sum to more than 2^60 bytes");
  }
  if (output < 0 || output >= int(ops.size()))
    throw std::invalid_argument("segment: output " + std::to_string(output) +
                                " is not an op index in [0, " + std::to_string(ops.size()) + ")");
}

bool contains(const Region& outer, const Region& inner) {
  if (inner.empty()) return true;
  if (outer.empty()) return false;
  return outer.h.lo <= inner.h.lo && inner.h.hi <= outer.h.hi && outer.w.lo <= inner.w.lo &&
         inner.w.hi <= outer.w.hi;
}

Region hull(const Region& a, const Region& b) {
  if (a.empty()) return b.empty() ? Region{} : b;
  if (b.empty()) return a;
  return {hull(a.h, b.h), hull(a.w, b.w)};
}

std::string to_string(const Region& r) {
  if (r.empty()) return "empty";
  return "[" + std::to_string(r.h.lo) + "," + std::to_string(r.h.hi) + ")x[" +
         std::to_string(r.w.lo) + "," + std::to_string(r.w.hi) + ")";
}

void Tiling::validate(int64_t out_h, int64_t out_w) const {
  auto check = [](const std::vector<int64_t>& b, const char* name, int64_t n) {
    if (b.size() < 2 || b.front() != 0 || b.back() != n)
      throw std::invalid_argument(std::string("tiling: ") + name + " must run from 0 to " +
                                  std::to_string(n) + " with at least one tile");
    for (size_t i = 1; i < b.size(); ++i)
      if (b[i] <= b[i - 1])
        throw std::invalid_argument(std::string("tiling: ") + name +
                                    " must strictly increase, got " + std::to_string(b[i - 1]) +
                                    " then " + std::to_string(b[i]));
  };
  check(h_bounds, "h_bounds", out_h);
  check(w_bounds, "w_bounds", out_w);
}

Tiling even_tiling(int64_t out_h, int64_t out_w, int64_t rows, int64_t cols) {
  if (out_h < 1 || out_w < 1) throw std::invalid_argument("even_tiling: output sizes must be >= 1");
  if (rows < 1 || rows > out_h || cols < 1 || cols > out_w)
    throw std::invalid_argument("even_tiling: " + std::to_string(rows) + "x" +
                                std::to_string(cols) + " tiles do not fit an output of " +
                                std::to_string(out_h) + "x" + std::to_string(out_w));
  return {even_bounds(out_h, rows), even_bounds(out_w, cols)};
}

Tiling sized_tiling(int64_t out_h, int64_t out_w, int64_t tile_h, int64_t tile_w) {
  if (out_h < 1 || out_w < 1 || tile_h < 1 || tile_w < 1)
    throw std::invalid_argument("sized_tiling: sizes must be >= 1");
  auto bounds = [](int64_t n, int64_t t) {
    std::vector<int64_t> b{0};
    while (b.back() < n)
      b.push_back(std::min(n, b.back() + t));
    return b;
  };
  return {bounds(out_h, tile_h), bounds(out_w, tile_w)};
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
