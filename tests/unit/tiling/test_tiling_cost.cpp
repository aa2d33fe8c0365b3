// Tile costs, the training bound and the choice of tiling: by hand, against a brute force on
// random segments, and on VGG16's feature extractor (224x224 and 2048x2048).
#include "segments.hpp"

#include <cmath>
#include <doctest/doctest.h>
#include <map>
#include <set>
#include <stdexcept>

using namespace kiln::sched;
using namespace kiln::sched::testing;

namespace {

constexpr int64_t MiB = int64_t(1) << 20;

Region rect(int64_t h0, int64_t h1, int64_t w0, int64_t w1) { return {{h0, h1}, {w0, w1}}; }

int64_t px_bytes(const Segment& s, int v) {
  return v < 0 ? s.in_channels * s.element_bytes
               : s.ops[size_t(v)].channels * s.ops[size_t(v)].element_bytes;
}

// TileCost's liveness for one tile, written out again.
int64_t ref_forward_peak(const Segment& s, const TilePlan& p) {
  auto bytes = [&](int v) {
    return (v < 0 ? p.input : p.op_out[size_t(v)]).area() * px_bytes(s, v);
  };
  std::vector<int> last(s.ops.size(), -1);
  for (size_t i = 0; i < s.ops.size(); ++i)
    if (!p.op_out[i].empty())
      for (int v : s.ops[i].inputs)
        if (v >= 0) last[size_t(v)] = int(i);
  int64_t live = bytes(-1), peak = live;
  for (size_t i = 0; i < s.ops.size(); ++i) {
    if (p.op_out[i].empty()) continue;
    live += bytes(int(i));
    peak = std::max(peak, live);
    std::vector<int> ins = s.ops[i].inputs;
    std::sort(ins.begin(), ins.end());
    ins.erase(std::unique(ins.begin(), ins.end()), ins.end());
    for (int v : ins)
      if (v >= 0 && v != s.output && last[size_t(v)] == int(i)) live -= bytes(v);
  }
  return peak;
}

// The training working set replayed as an executor would: the steps kiln's tile emitter
// runs, each allocating buffers and reading others; a buffer is freed after the last step
// that reads it.
int64_t ref_train(const Segment& s, const TilePlan& p) {
  const int n = int(s.ops.size());
  auto bytes = [&](int v) {
    return (v < 0 ? p.input.area() : p.op_out[size_t(v)].area()) * px_bytes(s, v);
  };
  auto computes = [&](int i) { return !p.op_out[size_t(i)].empty(); };
  std::vector<int> readers(size_t(n) + 1, 0);
  for (int i = 0; i < n; ++i)
    if (computes(i))
      for (int v : s.ops[size_t(i)].inputs)
        ++readers[size_t(v) + 1];
  auto copied = [&](int v) { return v < 0 || readers[size_t(v) + 1] > 1; };
  auto value = [](int v) { return "v" + std::to_string(v); };
  auto grad = [](int v) { return "g" + std::to_string(v); };
  auto copy = [](int i, int v) { return "w" + std::to_string(i) + "." + std::to_string(v); };
  struct Step {
    std::map<std::string, int64_t> alloc;
    std::set<std::string> reads;
  };
  std::vector<Step> steps;
  for (int i = 0; i < n; ++i) {
    if (!computes(i)) continue;
    Step st;
    for (int v : s.ops[size_t(i)].inputs) {
      if (copied(v)) st.alloc[copy(i, v)] = bytes(v);
      if (v >= 0) st.reads.insert(value(v));
    }
    st.alloc[value(i)] = bytes(i);
    steps.push_back(st);
  }
  std::set<std::string> grads = {grad(s.output)};
  for (int i = n - 1; i >= 0; --i) {
    if (!computes(i) || !grads.count(grad(i))) continue;
    const SegOp& op = s.ops[size_t(i)];
    Step st;
    if (i == s.output) st.alloc[grad(i)] = bytes(i);
    st.reads.insert(grad(i));
    int64_t temp = 0;
    for (int v : op.inputs) {
      if (v < 0 && op.backward_reads_input) st.reads.insert(copy(i, v));
      if (v < 0) continue;
      if (!grads.count(grad(v))) grads.insert(grad(v)), st.alloc[grad(v)] = bytes(v);
      st.reads.insert(grad(v));
      temp = std::max(temp, bytes(v));
      if (op.backward_reads_input) st.reads.insert(copied(v) ? copy(i, v) : value(v));
    }
    st.alloc["temp"] = temp;
    st.reads.insert("temp");
    if (op.backward_reads_output) st.reads.insert(value(i));
    steps.push_back(st);
  }
  std::map<std::string, size_t> last;
  for (size_t k = 0; k < steps.size(); ++k) {
    for (const auto& [b, _] : steps[k].alloc)
      last[b] = std::max(last[b], k);
    for (const std::string& b : steps[k].reads)
      last[b] = k;
  }
  std::map<std::string, int64_t> live;
  int64_t peak = 0;
  for (size_t k = 0; k < steps.size(); ++k) {
    for (const auto& [b, x] : steps[k].alloc)
      live[b] = x;
    int64_t t = 0;
    for (const auto& [b, x] : live)
      t += x;
    peak = std::max(peak, t);
    for (auto it = live.begin(); it != live.end();)
      it = last[it->first] <= k ? live.erase(it) : std::next(it);
  }
  return peak;
}

int64_t full_bytes(const Segment& s, int v) {
  const int64_t area = v < 0 ? s.in_h * s.in_w : s.ops[size_t(v)].out_h * s.ops[size_t(v)].out_w;
  return area * px_bytes(s, v);
}

TestSeg two_convs() {
  TestSeg t;
  t.seg.in_h = t.seg.in_w = 10;
  const int a = t.add_op(Kind::conv, {-1}, square(3, 1, 1), square(3, 1, 1), false, 1,
                         std::vector<double>(9, 1.0));
  t.add_op(Kind::conv, {a}, square(3, 1, 1), square(3, 1, 1), false, 1,
           std::vector<double>(9, 1.0));
  return t;
}

// The smallest tiled_peak over all grids up to max x max, and the fewest tiles that fit.
struct Brute {
  int64_t min_peak = INT64_MAX;
  int fewest_fitting = INT32_MAX;
};
Brute brute(const Segment& s, int64_t budget, bool train, int max) {
  const SegOp& out = s.ops[size_t(s.output)];
  Brute b;
  for (int64_t r = 1; r <= std::min<int64_t>(max, out.out_h); ++r)
    for (int64_t c = 1; c <= std::min<int64_t>(max, out.out_w); ++c) {
      const int64_t p = tiled_peak(s, even_tiling(out.out_h, out.out_w, r, c), train);
      b.min_peak = std::min(b.min_peak, p);
      if (p <= budget) b.fewest_fitting = std::min(b.fewest_fitting, int(r * c));
    }
  return b;
}

// choose_tiling at `budget`: the fewest tiles that fit, or Infeasible with the exact least
// budget (which then works, and one byte less does not).
void check_choice(const Segment& s, int64_t budget, bool train, int max) {
  const Brute b = brute(s, budget, train, max);
  try {
    const Tiling t = choose_tiling(s, budget, train, max);
    CHECK(tiled_peak(s, t, train) <= budget);
    CHECK(t.count() == b.fewest_fitting);
  } catch (const Infeasible& e) {
    CHECK(b.fewest_fitting == INT32_MAX);
    CHECK(e.min_feasible_bytes > budget);
    CHECK(e.min_feasible_bytes == b.min_peak);
    const Tiling t = choose_tiling(s, e.min_feasible_bytes, train, max);
    CHECK(tiled_peak(s, t, train) <= e.min_feasible_bytes);
    CHECK_THROWS_AS(choose_tiling(s, e.min_feasible_bytes - 1, train, max), Infeasible);
  }
}

// A ResNet-like stack: a stem conv7x7 s2 p3, max pool 3x3 s2 p1, then residual blocks
// (every other one strided, with a 1x1 strided shortcut).
TestSeg resnet_like(int64_t side_px, int blocks) {
  TestSeg t;
  t.seg.in_h = t.seg.in_w = side_px;
  t.seg.in_channels = 3;
  int x = t.add_op(Kind::conv, {-1}, square(7, 2, 3), square(7, 2, 3), false, 64);
  x = t.add_op(Kind::max_pool, {x}, square(3, 2, 1), square(3, 2, 1), false, 64);
  int64_t c = 64;
  for (int b = 0; b < blocks; ++b) {
    const int64_t s = b % 2 == 1 ? 2 : 1;
    if (s == 2) c *= 2;
    const int c1 = t.add_op(Kind::conv, {x}, square(3, s, 1), square(3, s, 1), false, c);
    const int c2 = t.add_op(Kind::conv, {c1}, square(3, 1, 1), square(3, 1, 1), false, c);
    const int sc = s == 1 ? x : t.add_op(Kind::conv, {x}, square(1, s), square(1, s), false, c);
    x = t.add_op(Kind::add, {c2, sc}, {}, {}, false, c);
  }
  return t;
}

} // namespace

TEST_CASE("tile_cost by hand: two 3x3 convs on 10x10") {
  const TestSeg t = two_convs();
  const Segment& s = t.seg;
  // 2x2: each tile holds a 7x7 input region, conv1 6x6, conv2 5x5 (4 bytes each); computing
  // conv2 has all three live: (49 + 36 + 25) * 4.
  const TileCost c = tile_cost(s, even_tiling(10, 10, 2, 2));
  CHECK(c.peak_bytes == 440);
  CHECK(c.peak_tile == 0);
  REQUIRE(c.op_recompute.size() == 2);
  CHECK(c.op_recompute[0] == doctest::Approx(1.44)); // 4 * 36 / 100
  CHECK(c.op_recompute[1] == 1.0);
  CHECK(c.recompute_factor == doctest::Approx(1.22));
  // Training peaks at conv2's backward: the input window and conv1 (kept for the convs' weight
  // gradients; conv2's own value is dead, a conv's backward reads only its input), conv2's
  // gradient, conv1's gradient and a temporary of conv1's size: 196 + 144 + 100 + 144 + 144.
  CHECK(tile_train_peak(s, even_tiling(10, 10, 2, 2)) == 196 + 144 + 100 + 144 + 144);
  CHECK(resident_bytes(s) == 800);
  CHECK(tiled_peak(s, even_tiling(10, 10, 2, 2), false) == 1240);
  CHECK(tiled_peak(s, even_tiling(10, 10, 2, 2), true) == 800 + 728);
  // One tile: 300 values of 4 bytes.
  const TileCost one = tile_cost(s, even_tiling(10, 10, 1, 1));
  CHECK(one.peak_bytes == 1200);
  CHECK(one.recompute_factor == 1.0);
  CHECK(untiled_peak(s, false) == 2000);
  CHECK(untiled_peak(s, true) == 800 + 5 * 400); // the same five values, 400 bytes each
  // 3x1: the middle tile has halos on both sides: input 7 rows, conv1 5, conv2 3 (x 10).
  // Tile 0 (rows [0,4)): 6 + 5 + 4 rows; the middle one (rows [4,7)): 7 + 5 + 3: a tie.
  const TileCost three = tile_cost(s, even_tiling(10, 10, 3, 1));
  CHECK(three.peak_bytes == (60 + 50 + 40) * 4);
  CHECK(three.peak_tile == 0);
  CHECK(three.op_recompute[0] == doctest::Approx((5 + 5 + 4) / 10.0));
}

TEST_CASE("tile_cost: a freed branch, a kept output and ops that compute nothing") {
  // in(4 bytes x 2 ch) -> a (1x1, 3 ch) -> b (1x1, 5 ch) -> c = add(a, b) (1 ch), output b;
  // c computes nothing, so a is freed after b and b (the output) is kept.
  TestSeg t;
  t.seg.in_h = t.seg.in_w = 4;
  t.seg.in_channels = 2;
  const int a = t.add_op(Kind::relu, {-1}, {}, {}, false, 3);
  const int b = t.add_op(Kind::relu, {a}, {}, {}, false, 5);
  t.add_op(Kind::add, {a, b}, {}, {}, false, 1);
  t.seg.output = b;
  const TileCost c = tile_cost(t.seg, even_tiling(4, 4, 1, 1));
  CHECK(c.peak_bytes == 16 * 4 * (2 + 3 + 5));
  CHECK(c.op_recompute == std::vector<double>{1, 1, 0});
  // Training: the relus' backwards read their outputs, so a and b stay; the input (read by no
  // backward) is dead by b's backward, which holds b's and a's gradients and a temporary of a's.
  CHECK(tile_train_peak(t.seg, even_tiling(4, 4, 1, 1)) == 16 * 4 * (3 + 5) + 16 * 4 * (5 + 3 + 3));
  CHECK(resident_bytes(t.seg) == 16 * 4 * (2 + 5));
}

TEST_CASE("costs match a brute force over plan_tiles on random segments") {
  Rng rng{77};
  for (int iter = 0; iter < 500; ++iter) {
    const TestSeg t = random_segment(rng);
    const Segment& s = t.seg;
    CAPTURE(iter);
    const SegOp& out = s.ops[size_t(s.output)];
    const Tiling tiling =
        even_tiling(out.out_h, out.out_w, rng.uniform(1, std::min<int64_t>(8, out.out_h)),
                    rng.uniform(1, std::min<int64_t>(8, out.out_w)));
    const std::vector<TilePlan> plans = plan_tiles(s, tiling);
    const TileCost c = tile_cost(s, tiling);
    int64_t peak = -1, train = 0;
    int peak_tile = -1;
    std::vector<double> area(s.ops.size(), 0);
    for (size_t k = 0; k < plans.size(); ++k) {
      const int64_t p = ref_forward_peak(s, plans[k]);
      if (p > peak) peak = p, peak_tile = int(k);
      train = std::max(train, ref_train(s, plans[k]));
      for (size_t i = 0; i < s.ops.size(); ++i)
        area[i] += double(plans[k].op_out[i].area());
    }
    CHECK(c.peak_bytes == peak);
    CHECK(c.peak_tile == peak_tile);
    CHECK(tile_train_peak(s, tiling) == train);
    std::vector<char> path(s.ops.size(), 0);
    path[size_t(s.output)] = 1;
    for (int i = s.output; i >= 0; --i)
      if (path[size_t(i)])
        for (int v : s.ops[size_t(i)].inputs)
          if (v >= 0) path[size_t(v)] = 1;
    double work = 0, weighted = 0;
    for (size_t i = 0; i < s.ops.size(); ++i) {
      const SegOp& op = s.ops[i];
      const double full = double(op.out_h * op.out_w);
      CHECK(c.op_recompute[i] == doctest::Approx(area[i] / full));
      if (!path[i]) continue; // averaged over the ops on a path to the output
      work += full * double(op.channels);
      weighted += area[i] / full * full * double(op.channels);
    }
    CHECK(c.recompute_factor == doctest::Approx(weighted / work));
    const int64_t resident = full_bytes(s, -1) + full_bytes(s, s.output);
    CHECK(resident_bytes(s) == resident);
    CHECK(tiled_peak(s, tiling, false) == resident + peak);
    CHECK(tiled_peak(s, tiling, true) == resident + train);
    CHECK(untiled_peak(s, true) == tiled_peak(s, even_tiling(out.out_h, out.out_w, 1, 1), true));
  }
}

TEST_CASE("choose_tiling: the fewest tiles that fit, or the exact least budget") {
  Rng rng{5};
  for (int iter = 0; iter < 150; ++iter) {
    const TestSeg t = random_segment(rng, 6, 31);
    CAPTURE(iter);
    const bool train = rng.chance(50);
    const int64_t full = untiled_peak(t.seg, train);
    const int max = int(rng.uniform(1, 6));
    for (double f : {1.0, 0.9, 0.7, 0.5, 0.3, 0.1})
      check_choice(t.seg, int64_t(double(full) * f), train, max);
  }
  // Hand example: 2000 bytes run untiled; one byte less takes two row strips (rows before
  // columns at equal aspect): 800 resident + (70 + 60 + 50) * 4.
  const TestSeg t = two_convs();
  CHECK(choose_tiling(t.seg, 2000, false).count() == 1);
  const Tiling two = choose_tiling(t.seg, 1999, false);
  CHECK(two.h_bounds == std::vector<int64_t>{0, 5, 10});
  CHECK(two.w_bounds == std::vector<int64_t>{0, 10});
  CHECK(tiled_peak(t.seg, two, false) == 1520);
  // Four tiles: 2x2 first (square tiles), and it fits.
  CHECK(choose_tiling(t.seg, 1300, false).h_bounds == std::vector<int64_t>{0, 5, 10});
  CHECK(choose_tiling(t.seg, 1300, false).w_bounds == std::vector<int64_t>{0, 5, 10});
  // A wide output: at equal counts the grid with the squarest tiles comes first.
  TestSeg wide;
  wide.seg.in_h = 10;
  wide.seg.in_w = 40;
  wide.add_op(Kind::relu, {-1}, {}, {});
  // 3200 resident; a tile holds its input and output regions: 8 bytes per pixel.
  CHECK(untiled_peak(wide.seg, false) == 6400);
  const Tiling four = choose_tiling(wide.seg, 3200 + 8 * 100, false);
  CHECK(four.h_bounds == std::vector<int64_t>{0, 10});
  CHECK(four.w_bounds == std::vector<int64_t>{0, 10, 20, 30, 40});
  const Tiling eight = choose_tiling(wide.seg, 3200 + 8 * 50, false);
  CHECK(eight.h_bounds == std::vector<int64_t>{0, 5, 10}); // 2x4 of 5x10 before 1x8 of 10x5
  CHECK(eight.cols() == 4);
  // Below the resident tensors nothing fits.
  try {
    choose_tiling(t.seg, 799, false, 4);
    FAIL("fit below the resident bytes");
  } catch (const Infeasible& e) {
    CHECK(e.min_feasible_bytes == brute(t.seg, 0, false, 4).min_peak);
    CHECK(std::string(e.what()).find("smallest feasible budget is") != std::string::npos);
  }
  CHECK_THROWS_AS(choose_tiling(t.seg, 5000, false, 0), std::invalid_argument);
  CHECK_THROWS_AS(choose_tiling(t.seg, 5000, false, 1025), std::invalid_argument);
  Segment bad = t.seg;
  bad.ops[1].out_h = 13; // its last window would start past the padded input
  CHECK_THROWS_AS(choose_tiling(bad, 5000, false), std::invalid_argument);
}

TEST_CASE("VGG16 at 224x224: regions, peaks and recompute") {
  const TestSeg t = vgg16(224);
  const Segment& s = t.seg;
  REQUIRE(s.ops.size() == 18);
  const SegOp& out = s.ops[17];
  REQUIRE(out.out_h == 7);
  REQUIRE(out.channels == 512);
  // Untiled: the peak is conv2 running with the input and conv1 live.
  const TileCost one = tile_cost(s, even_tiling(7, 7, 1, 1));
  CHECK(one.peak_bytes == 3 * 224 * 224 * 4 + 2 * 64 * 224 * 224 * 4);
  CHECK(one.recompute_factor == 1.0);
  // 2x2: tile (0,0) computes output [0,4): 4 * 32 = 128 input rows plus VGG16's halo of 90
  // (per side: 2 x 16 + ... the convs at each scale: 3*16 + 3*8 + 3*4 + 2*2 + 2*1).
  const std::vector<TilePlan> p2 = plan_tiles(s, even_tiling(7, 7, 2, 2));
  CHECK(p2[0].input == rect(0, 218, 0, 218));
  CHECK(p2[0].op_out[0] == rect(0, 217, 0, 217)); // conv1
  CHECK(p2[0].op_out[16] == rect(0, 8, 0, 8));    // conv13
  CHECK(p2[3].input == rect(4 * 32 - 90, 224, 4 * 32 - 90, 224));
  const TileCost two = tile_cost(s, even_tiling(7, 7, 2, 2));
  const TileCost four = tile_cost(s, even_tiling(7, 7, 4, 4));
  // At 224 the halo (90 pixels a side) spans most of the image: tiling barely lowers the
  // peak and recomputes a lot.
  CHECK(two.peak_bytes == 3 * 218 * 218 * 4 + 64 * (217 * 217 + 216 * 216) * 4);
  CHECK(two.peak_bytes < one.peak_bytes);
  CHECK(four.peak_bytes <= two.peak_bytes);
  CHECK(two.recompute_factor > 2.5);
  CHECK(four.recompute_factor > two.recompute_factor);
  // conv13 feeds non-overlapping 2x2 pools: no halo, no recompute; conv1 the most.
  CHECK(two.op_recompute[16] == 1.0);
  CHECK(two.op_recompute[17] == 1.0);
  for (size_t i = 1; i < 17; ++i)
    CHECK(two.op_recompute[0] >= two.op_recompute[i]);
}

TEST_CASE("VGG16 at 2048x2048: interior halos, recompute, choice at 512 MiB in training") {
  const TestSeg t = vgg16(2048);
  const Segment& s = t.seg;
  REQUIRE(s.ops[17].out_h == 64);
  const Tiling t8 = even_tiling(64, 64, 8, 8);
  const std::vector<TilePlan> p8 = plan_tiles(s, t8);
  // Tile (3,3): output [24,32) -> input [24*32 - 90, 32*32 + 90) = [678, 1114).
  CHECK(p8[3 * 8 + 3].input == rect(678, 1114, 678, 1114));
  CHECK(p8[3 * 8 + 3].op_out[0] == rect(679, 1113, 679, 1113));
  // The corner tile has a halo only inward.
  CHECK(p8[0].input == rect(0, 256 + 90, 0, 256 + 90));
  const TileCost c8 = tile_cost(s, t8);
  // conv1 computes 434x434 for an interior 256x256 tile, less at the border.
  CHECK(c8.op_recompute[0] > 2.3);
  CHECK(c8.op_recompute[0] < (434.0 * 434.0) / (256.0 * 256.0));
  CHECK(c8.op_recompute[16] == 1.0);
  CHECK(c8.recompute_factor > 2.0);
  CHECK(c8.recompute_factor < c8.op_recompute[0]);

  const int64_t budget = 512 * MiB;
  const Tiling chosen = choose_tiling(s, budget, true);
  CHECK(tiled_peak(s, chosen, true) <= budget);
  CHECK(brute(s, budget, true, 16).fewest_fitting == chosen.count());
  INFO(chosen.rows(), "x", chosen.cols());
  // The squarest grid of its count on a square output.
  for (int r = 1; r <= chosen.count(); ++r)
    if (chosen.count() % r == 0)
      CHECK(std::max(chosen.rows(), chosen.cols()) * std::min(r, chosen.count() / r) <=
            std::max(r, chosen.count() / r) * std::min(chosen.rows(), chosen.cols()));
  // Untiled training is far above the budget; inference needs fewer tiles.
  CHECK(untiled_peak(s, true) > 8 * budget);
  CHECK(choose_tiling(s, budget, false).count() <= chosen.count());
}

TEST_CASE("choose_tiling uses more tiles for smaller budgets; Infeasible at the floor") {
  const Segment s = vgg16(2048).seg;
  for (bool train : {false, true}) {
    int last_count = 1;
    int64_t budget = untiled_peak(s, train);
    CHECK(choose_tiling(s, budget, train).count() == 1);
    for (;;) {
      budget = budget * 3 / 4;
      try {
        const Tiling t = choose_tiling(s, budget, train);
        CHECK(t.count() >= last_count);
        CHECK(tiled_peak(s, t, train) <= budget);
        last_count = t.count();
      } catch (const Infeasible& e) {
        CHECK(e.min_feasible_bytes > budget);
        const Tiling t = choose_tiling(s, e.min_feasible_bytes, train);
        CHECK(t.count() >= last_count);
        CHECK_THROWS_AS(choose_tiling(s, e.min_feasible_bytes - 1, train), Infeasible);
        break;
      }
    }
    CHECK(last_count > 16);
  }
  // A small grid limit raises the floor.
  try {
    choose_tiling(s, 64 * MiB, true, 2);
    FAIL("fit");
  } catch (const Infeasible& e) {
    CHECK(e.min_feasible_bytes == brute(s, 0, true, 2).min_peak);
  }
}

TEST_CASE("monotone under refinement: splitting tiles never raises the peak") {
  // Regions shrink with the output tile, and a value live in a smaller tile is live in the
  // larger one at the same step, so a tiling whose every tile lies inside a tile of another
  // never has a higher forward or training peak.
  auto refine = [](Rng& rng, const std::vector<int64_t>& b) {
    std::vector<int64_t> r{0};
    for (size_t i = 1; i < b.size(); ++i) {
      for (int64_t x = r.back() + 1; x < b[i]; ++x)
        if (rng.chance(30)) r.push_back(x);
      r.push_back(b[i]);
    }
    return r;
  };
  auto check_refinements = [&](const Segment& s, Rng& rng, int steps) {
    const SegOp& out = s.ops[size_t(s.output)];
    Tiling t = even_tiling(out.out_h, out.out_w, 1, 1);
    int64_t f = tile_cost(s, t).peak_bytes, tr = tile_train_peak(s, t);
    for (int k = 0; k < steps; ++k) {
      t = {refine(rng, t.h_bounds), refine(rng, t.w_bounds)};
      const int64_t f2 = tile_cost(s, t).peak_bytes, tr2 = tile_train_peak(s, t);
      CHECK(f2 <= f);
      CHECK(tr2 <= tr);
      f = f2, tr = tr2;
    }
  };
  Rng rng{99};
  for (int iter = 0; iter < 300; ++iter) {
    CAPTURE(iter);
    check_refinements(random_segment(rng).seg, rng, 4);
  }
  check_refinements(vgg16(224).seg, rng, 4);
  check_refinements(vgg16(2048).seg, rng, 6);
  check_refinements(resnet_like(512, 6).seg, rng, 4);
  // Halving sized tiles refines them.
  const Segment v = vgg16(2048).seg;
  int64_t last = INT64_MAX;
  for (int64_t side : {64, 32, 16, 8, 4, 2, 1}) {
    const int64_t p = tile_train_peak(v, sized_tiling(64, 64, side, side));
    CHECK(p <= last);
    last = p;
  }
}

TEST_CASE("monotone in k for k x k even tiles on VGG16; not in general") {
  auto peaks = [](const Segment& s, int max_k) {
    const SegOp& out = s.ops[size_t(s.output)];
    std::vector<int64_t> p;
    max_k = int(std::min<int64_t>({max_k, out.out_h, out.out_w}));
    for (int k = 1; k <= max_k; ++k) {
      const Tiling t = even_tiling(out.out_h, out.out_w, k, k);
      p.push_back(tile_cost(s, t).peak_bytes);
      p.push_back(tile_train_peak(s, t));
    }
    return p;
  };
  for (int64_t side : {224, 1000, 2048}) {
    const std::vector<int64_t> p = peaks(vgg16(side).seg, 64);
    CAPTURE(side);
    for (size_t k = 2; k < p.size(); ++k)
      CHECK(p[k] <= p[k - 2]);
  }
  // Not nested, k + 1 tiles can be worse than k: on this ResNet-like stack (16x16 output,
  // halo ~100 input pixels a side) the 2x2 tiles are border tiles clamped by the image, while
  // the middle tile of 3x3 carries halos on both sides (input rows [47,466) vs [111,512)).
  // choose_tiling therefore tries every grid by count rather than assuming monotonicity.
  const std::vector<int64_t> r = peaks(resnet_like(512, 6).seg, 3);
  CHECK(r[4] > r[2]);
  CHECK(r[5] > r[3]);
}
