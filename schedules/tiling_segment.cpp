// Segments and tilings checked, and the regions they are made of (DESIGN.md 5.2): what the
// planner (tiling.cpp) may assume of its inputs.
#include "schedules/tiling.hpp"

#include "schedules/tiling_detail.hpp"

#include <algorithm>
#include <stdexcept>

namespace kiln::sched {

using namespace detail;

namespace {

constexpr int64_t kMaxWindowField = int64_t(1) << 24;
constexpr int64_t kMaxElementBytes = 1024;
constexpr int64_t kMaxSegmentBytes = int64_t(1) << 60;
constexpr size_t kMaxOps = 1000000;

std::string op_place(const Segment& s, size_t i) {
  std::string p = "segment op " + std::to_string(i);
  if (!s.ops[i].name.empty()) p += " '" + s.ops[i].name + "'";
  return p;
}

// a * b for a, b >= 0, or -1 when it exceeds cap.
int64_t mul_capped(int64_t a, int64_t b, int64_t cap) {
  if (a == 0 || b == 0) return 0;
  if (a > cap / b) return -1;
  return a * b;
}

} // namespace

void detail::check_range(const std::string& place, const std::string& field, int64_t v, int64_t lo,
                         int64_t hi, const char* hi_text) {
  if (v < lo || v > hi)
    throw std::invalid_argument(place + ": " + field + " must be in [" + std::to_string(lo) + ", " +
                                hi_text + "], got " + std::to_string(v));
}

void detail::check_window(const std::string& place, const std::string& a, const Window& w) {
  check_range(place, a + "kernel", w.kernel, 1, kMaxWindowField, "2^24");
  check_range(place, a + "stride", w.stride, 1, kMaxWindowField, "2^24");
  check_range(place, a + "padding", w.padding, 0, kMaxWindowField, "2^24");
  check_range(place, a + "dilation", w.dilation, 1, kMaxWindowField, "2^24");
}

// Value v: -1 is the segment input, else op v. Sizes of a validated segment.
int64_t detail::value_side(const Segment& s, int v, int axis) {
  if (v < 0) return axis == 0 ? s.in_h : s.in_w;
  return axis == 0 ? s.ops[size_t(v)].out_h : s.ops[size_t(v)].out_w;
}

Range detail::hull(Range a, Range b) {
  if (a.empty()) return b.empty() ? Range{} : b;
  if (b.empty()) return a;
  return {std::min(a.lo, b.lo), std::max(a.hi, b.hi)};
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
      const std::string win = "window (kernel " + std::to_string(w.kernel) + ", stride " +
                              std::to_string(w.stride) + ", padding " + std::to_string(w.padding) +
                              ", dilation " + std::to_string(w.dilation) + ")";
      if (w.dilation * (w.kernel - 1) + 1 > n + 2 * w.padding)
        throw std::invalid_argument(place + ": " + win + " does not fit in an input of " +
                                    std::to_string(n) + (a == 0 ? " rows" : " columns"));
      const int64_t last = (out - 1) * w.stride - w.padding; // where the last window starts
      if (last >= n + w.padding)
        throw std::invalid_argument(place + ": " + field + " is " + std::to_string(out) +
                                    ", but its " + win + " would start its last at " +
                                    std::to_string(last) + ", past the padded input of " +
                                    std::to_string(n));
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

} // namespace kiln::sched
