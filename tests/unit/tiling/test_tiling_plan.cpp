// The tiling problem, tilings and regions: the rule by hand and by brute force, validation,
// hand-checked halos, and invariants (a) and (b) on random segments.
#include "segments.hpp"

#include <doctest/doctest.h>
#include <stdexcept>

using namespace kiln::sched;
using namespace kiln::sched::testing;

namespace {

Range rg(int64_t lo, int64_t hi) { return {lo, hi}; }
Region rect(int64_t h0, int64_t h1, int64_t w0, int64_t w1) { return {{h0, h1}, {w0, w1}}; }

// Two 3x3 convs, padding 1, on 10x10, one channel of 4 bytes.
TestSeg two_convs() {
  TestSeg t;
  t.seg.in_h = t.seg.in_w = 10;
  t.seg.element_bytes = 4;
  const int a = t.add_op(Kind::conv, {-1}, square(3, 1, 1), square(3, 1, 1), false, 1,
                         std::vector<double>(9, 1.0));
  t.add_op(Kind::conv, {a}, square(3, 1, 1), square(3, 1, 1), false, 1,
           std::vector<double>(9, 1.0));
  return t;
}

std::string error_of(const Segment& s) {
  try {
    s.validate();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

// Invariants (a) and (b) for one tiling; returns whether some op on a path to the output
// got an empty region in some tile (the planner's 2D case).
bool check_plans(const TestSeg& t, const Tiling& tiling) {
  const Segment& s = t.seg;
  const SegOp& out = s.ops[size_t(s.output)];
  const std::vector<TilePlan> plans = plan_tiles(s, tiling);
  REQUIRE(int(plans.size()) == tiling.count());
  // (a) the tiles, row-major, cover the output exactly once.
  std::vector<int> covered(size_t(out.out_h * out.out_w), 0);
  for (int i = 0; i < tiling.rows(); ++i)
    for (int j = 0; j < tiling.cols(); ++j) {
      const TilePlan& p = plans[size_t(i * tiling.cols() + j)];
      CHECK(p.out == tiling.tile(i, j));
      for (int64_t y = p.out.h.lo; y < p.out.h.hi; ++y)
        for (int64_t x = p.out.w.lo; x < p.out.w.hi; ++x)
          ++covered[size_t(y * out.out_w + x)];
    }
  CHECK(std::all_of(covered.begin(), covered.end(), [](int c) { return c == 1; }));

  // Which ops reach the output.
  std::vector<char> path(s.ops.size(), 0);
  path[size_t(s.output)] = 1;
  for (int i = s.output; i >= 0; --i)
    if (path[size_t(i)])
      for (int v : s.ops[size_t(i)].inputs)
        if (v >= 0) path[size_t(v)] = 1;

  bool empty_on_path = false;
  for (const TilePlan& p : plans) {
    REQUIRE(p.op_out.size() == s.ops.size());
    // (b) each value's region lies in its output and is exactly the bounding union of what
    // its consumers need (so it covers every need); the output op computes the tile.
    std::vector<Region> need(s.ops.size() + 1); // [v + 1]
    for (size_t i = s.ops.size(); i-- > 0;) {
      const Region r = p.op_out[i];
      const SegOp& op = s.ops[i];
      CHECK(contains({{0, op.out_h}, {0, op.out_w}}, r));
      if (int(i) == s.output)
        CHECK(r == p.out);
      else
        CHECK(r == need[i + 1]);
      if (!path[i]) CHECK(r.empty());
      if (path[i] && r.empty()) empty_on_path = true;
      if (r.empty()) continue;
      for (int k = 0; k < int(op.inputs.size()); ++k) {
        const int v = op.inputs[size_t(k)];
        const Region n = needed_input(op, k, r, t.side(v, 0), t.side(v, 1));
        need[size_t(v + 1)] = hull(need[size_t(v + 1)], n);
        CHECK(contains(v < 0 ? p.input : p.op_out[size_t(v)], n)); // covers the need
      }
    }
    CHECK(p.input == need[0]);
    CHECK(contains({{0, s.in_h}, {0, s.in_w}}, p.input));
    if (p.input.empty()) empty_on_path = true;
  }
  return empty_on_path;
}

} // namespace

TEST_CASE(
    "window_out (runtime's rule, as the planner's tests use it): floor and PyTorch's ceil mode") {
  CHECK(window_out({3, 1, 1, 1}, 10) == 10);
  CHECK(window_out({3, 2, 0, 1}, 10) == 4);
  CHECK(window_out({3, 2, 0, 1}, 10, true) == 5);
  CHECK(window_out({2, 2, 0, 1}, 5) == 2);
  CHECK(window_out({2, 2, 0, 1}, 5, true) == 3); // last window starts at 4 < 5
  CHECK(window_out({2, 2, 1, 1}, 5) == 3);
  CHECK(window_out({2, 2, 1, 1}, 5, true) == 3); // a 4th would start at 5: dropped
  CHECK(window_out({3, 1, 0, 2}, 5) == 1);       // dilated extent 5
  CHECK(window_out({3, 1, 0, 2}, 4) == 0);       // does not fit
  CHECK(window_out({1, 3, 2, 1}, 1) == 2);       // windows at -2 and 1: the first is padding
}

TEST_CASE("regions: empty, contains, hull") {
  CHECK(Region{}.empty());
  CHECK(rect(0, 3, 2, 2).empty());
  CHECK(rect(0, 3, 0, 2).area() == 6);
  CHECK(rect(5, 3, 0, 2).area() == 0);
  CHECK(contains(rect(0, 5, 0, 5), rect(1, 3, 2, 5)));
  CHECK_FALSE(contains(rect(0, 5, 0, 5), rect(1, 6, 2, 5)));
  CHECK(contains(rect(0, 1, 0, 1), Region{}));
  CHECK_FALSE(contains(Region{}, rect(0, 1, 0, 1)));
  CHECK(hull(rect(0, 2, 3, 4), rect(5, 6, 0, 1)) == rect(0, 6, 0, 4));
  CHECK(hull(Region{}, rect(1, 2, 1, 2)) == rect(1, 2, 1, 2));
  CHECK(hull(rect(1, 2, 1, 2), rect(3, 4, 4, 4)) == rect(1, 2, 1, 2)); // empty operand ignored
  CHECK(hull(rect(3, 1, 0, 1), Region{}) == Region{});
  CHECK(to_string(rect(0, 7, 0, 5)) == "[0,7)x[0,5)");
  CHECK(to_string(Region{}) == "empty");
}

TEST_CASE("tilings: even and sized") {
  CHECK(even_tiling(10, 10, 3, 1).h_bounds == std::vector<int64_t>{0, 4, 7, 10});
  CHECK(even_tiling(10, 10, 3, 1).w_bounds == std::vector<int64_t>{0, 10});
  CHECK(even_tiling(7, 9, 7, 4).h_bounds == std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7});
  CHECK(even_tiling(7, 9, 7, 4).w_bounds == std::vector<int64_t>{0, 3, 5, 7, 9});
  for (int64_t n = 1; n <= 40; ++n)
    for (int64_t k = 1; k <= n; ++k) {
      const Tiling t = even_tiling(n, 1, k, 1);
      REQUIRE(t.rows() == k);
      t.validate(n, 1);
      for (int i = 1; i < t.rows(); ++i) {
        const int64_t a = t.h_bounds[size_t(i)] - t.h_bounds[size_t(i) - 1];
        const int64_t b = t.h_bounds[size_t(i) + 1] - t.h_bounds[size_t(i)];
        CHECK((a == b || a == b + 1)); // at most 1 apart, larger first
      }
    }
  CHECK(sized_tiling(10, 3, 4, 1).h_bounds == std::vector<int64_t>{0, 4, 8, 10});
  CHECK(sized_tiling(10, 3, 4, 1).w_bounds == std::vector<int64_t>{0, 1, 2, 3});
  CHECK(sized_tiling(10, 3, 20, 3).h_bounds == std::vector<int64_t>{0, 10});
  CHECK(sized_tiling(10, 3, 5, 3).count() == 2);
  CHECK_THROWS_AS(even_tiling(10, 10, 0, 1), std::invalid_argument);
  CHECK_THROWS_AS(even_tiling(10, 10, 11, 1), std::invalid_argument);
  CHECK_THROWS_AS(even_tiling(0, 10, 1, 1), std::invalid_argument);
  CHECK_THROWS_AS(sized_tiling(10, 10, 0, 1), std::invalid_argument);
  CHECK_THROWS_AS((Tiling{{0, 5, 5, 10}, {0, 10}}.validate(10, 10)), std::invalid_argument);
  CHECK_THROWS_AS((Tiling{{1, 10}, {0, 10}}.validate(10, 10)), std::invalid_argument);
  CHECK_THROWS_AS((Tiling{{0, 9}, {0, 10}}.validate(10, 10)), std::invalid_argument);
  CHECK_THROWS_AS((Tiling{{0}, {0, 10}}.validate(0, 10)), std::invalid_argument);
  const TestSeg t = two_convs();
  CHECK_THROWS_AS(plan_tiles(t.seg, Tiling{{0, 5, 11}, {0, 10}}), std::invalid_argument);
}

TEST_CASE("needed_input: the rule by hand") {
  SegOp op;
  op.inputs = {-1};
  op.window = {Window{3, 2, 1, 1}, Window{5, 1, 0, 2}};
  op.out_h = window_out(op.window[0], 9);  // 5
  op.out_w = window_out(op.window[1], 12); // 4
  REQUIRE(op.out_h == 5);
  REQUIRE(op.out_w == 4);
  // h: rows [1, 3) need [1*2-1, 2*2-1+2+1) = [1, 6); w: [0, 4) needs [0, 3+8+1) = [0, 12).
  CHECK(needed_input(op, 0, rect(1, 3, 0, 4), 9, 12) == rect(1, 6, 0, 12));
  // The top row's window starts in the padding: clamped at 0. The last reaches 9: clamped.
  CHECK(needed_input(op, 0, rect(0, 1, 1, 2), 9, 12) == rect(0, 2, 1, 10));
  CHECK(needed_input(op, 0, rect(4, 5, 0, 1), 9, 12) == rect(7, 9, 0, 9));
  CHECK(needed_input(op, 0, Region{}, 9, 12) == Region{});
  // A 1x1 window at padding 2: the first output rows read only padding, so need nothing.
  SegOp pad;
  pad.inputs = {-1};
  pad.window = {Window{1, 1, 2, 1}, Window{1, 1, 2, 1}};
  pad.out_h = pad.out_w = 7; // from 3
  CHECK(needed_input(pad, 0, rect(0, 2, 0, 7), 3, 3) == Region{});
  CHECK(needed_input(pad, 0, rect(0, 3, 0, 7), 3, 3) == rect(0, 1, 0, 3));
  CHECK_THROWS_AS(needed_input(op, 1, rect(0, 1, 0, 1), 9, 12), std::invalid_argument);
  CHECK_THROWS_AS(needed_input(op, 0, rect(0, 6, 0, 1), 9, 12), std::invalid_argument);
}

TEST_CASE("needed_input: every tap in the image lies in the need, tight without gaps") {
  Rng rng{11};
  for (int iter = 0; iter < 3000; ++iter) {
    Window w{rng.uniform(1, 5), rng.uniform(1, 3), rng.uniform(0, 2), rng.uniform(1, 2)};
    const int64_t n = rng.uniform(1, 20);
    const int64_t out_n = window_out(w, n, rng.chance(50));
    if (out_n < 1) continue;
    const int64_t lo = rng.uniform(0, out_n - 1), hi = rng.uniform(lo + 1, out_n);
    SegOp op;
    op.inputs = {-1};
    op.window = {w, Window{}};
    op.out_h = out_n;
    op.out_w = 1;
    const Range need = needed_input(op, 0, rect(lo, hi, 0, 1), n, 1).h;
    int64_t tmin = n, tmax = -1;
    for (int64_t y = lo; y < hi; ++y)
      for (int64_t a = 0; a < w.kernel; ++a) {
        const int64_t tap = y * w.stride - w.padding + a * w.dilation;
        if (tap < 0 || tap >= n) continue;
        tmin = std::min(tmin, tap);
        tmax = std::max(tmax, tap);
      }
    CAPTURE(iter);
    CHECK(need.lo >= 0);
    CHECK(need.hi <= n);
    if (tmax >= 0) {
      CHECK(need.lo <= tmin);
      CHECK(need.hi >= tmax + 1);
    }
    // Taps contiguous (no dilation gap, windows overlapping or touching): exactly the taps.
    if (w.dilation == 1 && w.stride <= w.kernel) {
      if (tmax < 0)
        CHECK(need.empty());
      else
        CHECK(need == rg(tmin, tmax + 1));
    }
  }
}

TEST_CASE("segment validation names the op and the field") {
  const TestSeg good = two_convs();
  CHECK(error_of(good.seg).empty());
  auto broken = [&](auto&& edit) {
    Segment s = good.seg;
    edit(s);
    return error_of(s);
  };
  CHECK(broken([](Segment& s) { s.ops.clear(); }) == "segment has no ops");
  CHECK(broken([](Segment& s) { s.in_h = 0; }).find("in_h") != std::string::npos);
  CHECK(broken([](Segment& s) { s.element_bytes = 0; }).find("element_bytes") != std::string::npos);
  CHECK(broken([](Segment& s) {
          s.ops[1].window[0].stride = 0;
        }).find("segment op 1 'op1': window h stride") != std::string::npos);
  CHECK(broken([](Segment& s) { s.ops[1].window[1].padding = -1; }).find("window w padding") !=
        std::string::npos);
  CHECK(broken([](Segment& s) { s.ops[1].inputs = {1}; }).find("earlier op") != std::string::npos);
  CHECK(broken([](Segment& s) { s.ops[1].inputs = {-2}; }).find("earlier op") != std::string::npos);
  CHECK(broken([](Segment& s) { s.ops[0].inputs.clear(); }).find("no inputs") != std::string::npos);
  // A window starting past the padded input (10 rows and 1 of padding on each side).
  CHECK(broken([](Segment& s) { s.ops[1].out_h = 12; }).empty()); // starts at 10: clamped
  CHECK(broken([](Segment& s) { s.ops[1].out_h = 13; }).find("out_h is 13") != std::string::npos);
  CHECK(broken([](Segment& s) { s.ops[1].out_w = 14; }).find("out_w is 14") != std::string::npos);
  CHECK(broken([](Segment& s) { s.ops[1].channels = 0; }).find("channels") != std::string::npos);
  CHECK(broken([](Segment& s) { s.output = 2; }).find("output 2") != std::string::npos);
  CHECK(broken([](Segment& s) { s.output = -1; }).find("output -1") != std::string::npos);
  CHECK(broken([](Segment& s) { s.ops[1].window[0].kernel = 15; }).find("does not fit") !=
        std::string::npos);
  CHECK(broken([](Segment& s) { s.ops[1].channels = int64_t(1) << 58; }).find("2^60") !=
        std::string::npos);
  // An add of inputs of different sizes.
  CHECK(broken([](Segment& s) {
          s.ops[1].window = {square(3, 2, 1), square(3, 2, 1)};
          s.ops[1].out_h = s.ops[1].out_w = 5;
          SegOp add;
          add.name = "add";
          add.inputs = {0, 1};
          add.out_h = add.out_w = 10;
          s.ops.push_back(add);
          s.output = 2;
        }).find("inputs differ in size") != std::string::npos);
  // Ceil-mode out sizes are accepted, one past them is not (its last window starts at 10).
  CHECK(broken([](Segment& s) {
          s.ops[1].window = {square(2, 2), square(2, 2)};
          s.ops[1].out_h = window_out(square(2, 2), 10, true);
          s.ops[1].out_w = 5;
        }).empty());
  CHECK(broken([](Segment& s) {
          s.ops[1].window = {square(3, 2), square(3, 2)};
          s.ops[1].out_h = 5; // floor 4, ceil 5
          s.ops[1].out_w = 4;
        }).empty());
  CHECK(broken([](Segment& s) {
          s.ops[1].window = {square(3, 2), square(3, 2)};
          s.ops[1].out_h = 6;
          s.ops[1].out_w = 4;
        }).find("past the padded input of 10") != std::string::npos);
}

TEST_CASE("hand-checked halos: two 3x3 convs, padding 1, 10x10, 2x2 tiles") {
  const TestSeg t = two_convs();
  const std::vector<TilePlan> p = plan_tiles(t.seg, even_tiling(10, 10, 2, 2));
  REQUIRE(p.size() == 4);
  // Tile (0,0): 5 output rows; conv1 needs one more, the input two more (the halo); no halo
  // above or left of the image.
  CHECK(p[0].out == rect(0, 5, 0, 5));
  CHECK(p[0].op_out[1] == rect(0, 5, 0, 5));
  CHECK(p[0].op_out[0] == rect(0, 6, 0, 6));
  CHECK(p[0].input == rect(0, 7, 0, 7));
  CHECK(p[1].op_out[0] == rect(0, 6, 4, 10));
  CHECK(p[1].input == rect(0, 7, 3, 10));
  CHECK(p[2].input == rect(3, 10, 0, 7));
  // Bottom-right at the true border: halo only up and left, nothing past the image.
  CHECK(p[3].op_out[0] == rect(4, 10, 4, 10));
  CHECK(p[3].input == rect(3, 10, 3, 10));
  // 3 x 1 tiles: the middle one has halos on both sides.
  const std::vector<TilePlan> q = plan_tiles(t.seg, even_tiling(10, 10, 3, 1));
  CHECK(q[1].out == rect(4, 7, 0, 10));
  CHECK(q[1].op_out[0] == rect(3, 8, 0, 10));
  CHECK(q[1].input == rect(2, 9, 0, 10));
}

TEST_CASE("hand-checked halos: a strided residual block and a dead branch") {
  // in 11x11 -> conv3x3 s2 p1 (6x6) -> conv3x3 p1 (6x6); shortcut conv1x1 s2 (6x6); add.
  // A relu of the input that nothing uses, and a relu after the output.
  TestSeg t;
  t.seg.in_h = t.seg.in_w = 11;
  const int dead = t.add_op(Kind::relu, {-1}, {}, {});
  const int c1 = t.add_op(Kind::conv, {-1}, square(3, 2, 1), square(3, 2, 1), false, 1,
                          std::vector<double>(9, 1.0));
  const int c2 = t.add_op(Kind::conv, {c1}, square(3, 1, 1), square(3, 1, 1), false, 1,
                          std::vector<double>(9, 1.0));
  const int sc = t.add_op(Kind::conv, {-1}, square(1, 2), square(1, 2), false, 1, {1.0});
  const int add = t.add_op(Kind::add, {c2, sc}, {}, {});
  t.add_op(Kind::relu, {add}, {}, {});
  t.seg.output = add;
  const std::vector<TilePlan> p = plan_tiles(t.seg, even_tiling(6, 6, 2, 2));
  // Tile (1,1): rows [3,6). c2 and sc compute exactly that; c1 needs [2,6); the input needs
  // [2*2-1, 5*2-1+3) = [3,11) for c1 and [6,11) for the 1x1 branch: union [3,11).
  const TilePlan& b = p[3];
  CHECK(b.op_out[size_t(add)] == rect(3, 6, 3, 6));
  CHECK(b.op_out[size_t(c2)] == rect(3, 6, 3, 6));
  CHECK(b.op_out[size_t(sc)] == rect(3, 6, 3, 6));
  CHECK(b.op_out[size_t(c1)] == rect(2, 6, 2, 6));
  CHECK(b.input == rect(3, 11, 3, 11));
  CHECK(b.op_out[size_t(dead)] == Region{});
  CHECK(b.op_out[5] == Region{});
  // Tile (0,0): rows [0,3); c1 [0,4); input: c1 needs [-1, 3*2-1+3) = [0,8), sc needs [0,5).
  CHECK(p[0].op_out[size_t(c1)] == rect(0, 4, 0, 4));
  CHECK(p[0].input == rect(0, 8, 0, 8));
}

TEST_CASE("plan_tiles: invariants (a) and (b) on random segments") {
  Rng rng{2022};
  int tilings = 0, planned_2d = 0;
  for (int iter = 0; iter < 1000; ++iter) {
    const TestSeg t = random_segment(rng);
    CAPTURE(iter);
    REQUIRE(error_of(t.seg).empty());
    const SegOp& out = t.seg.ops[size_t(t.seg.output)];
    std::vector<Tiling> ts;
    ts.push_back(even_tiling(out.out_h, out.out_w, 1, 1));
    ts.push_back(even_tiling(out.out_h, out.out_w, rng.uniform(1, std::min<int64_t>(8, out.out_h)),
                             rng.uniform(1, std::min<int64_t>(8, out.out_w))));
    ts.push_back(
        sized_tiling(out.out_h, out.out_w, rng.uniform(1, out.out_h), rng.uniform(1, out.out_w)));
    // Random cut points: arbitrary uneven tiles.
    auto cuts = [&](int64_t n) {
      std::vector<int64_t> b{0};
      while (b.back() < n)
        b.push_back(std::min(n, b.back() + rng.uniform(1, 1 + n / 2)));
      return b;
    };
    ts.push_back({cuts(out.out_h), cuts(out.out_w)});
    for (const Tiling& tiling : ts) {
      ++tilings;
      if (check_plans(t, tiling)) ++planned_2d;
    }
  }
  CHECK(tilings == 4000);
  CHECK(planned_2d > 0);           // tiles where a windowed op reads only padding
  CHECK(planned_2d < tilings / 2); // and the common case
}
