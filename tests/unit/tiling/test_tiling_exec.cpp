// Invariant (c): running every tile on its regions and stitching the output tiles gives
// exactly the untiled result, with a reference executor (segments.hpp) that asserts every
// in-image read lies inside the region the tile computed for that value.
#include "segments.hpp"

#include <cmath>
#include <doctest/doctest.h>

using namespace kiln::sched;
using namespace kiln::sched::testing;

namespace {

// Whole vs tiled on fresh random integer data. Every op's patch must equal the whole run
// over its region (halos are real data), and the stitched output the whole output, bit for
// bit; the stitched image starts as NaN so an unwritten element fails. Returns whether some
// tile left an op that feeds the output with nothing to compute (every tap in padding).
bool check_exact(const TestSeg& t, const Tiling& tiling, Rng& rng) {
  const Segment& s = t.seg;
  const Image input = random_image(rng, s.in_h, s.in_w);
  const std::vector<Image> whole = run_whole(t, input);
  const Image& ref = whole[size_t(s.output)];
  Image stitched{ref.h, ref.w, std::vector<double>(ref.v.size(), std::nan(""))};
  int64_t stray = 0, wrong_patch = 0;
  bool idle_op = false;
  std::vector<char> feeds(s.ops.size(), 0); // reaches the output
  feeds[size_t(s.output)] = 1;
  for (int i = s.output; i >= 0; --i)
    if (feeds[size_t(i)])
      for (int v : s.ops[size_t(i)].inputs)
        if (v >= 0) feeds[size_t(v)] = 1;
  for (const TilePlan& plan : plan_tiles(s, tiling)) {
    for (size_t i = 0; i < s.ops.size(); ++i)
      if (feeds[i] && plan.op_out[i].empty()) idle_op = true;
    const std::vector<Patch> patches = run_tile(t, plan, input, stray);
    for (size_t i = 0; i < patches.size(); ++i) {
      const Patch& p = patches[i];
      if (p.r.empty()) continue;
      for (int64_t y = p.r.h.lo; y < p.r.h.hi; ++y)
        for (int64_t x = p.r.w.lo; x < p.r.w.hi; ++x)
          if (!(p.at(y, x) == whole[i].at(y, x))) ++wrong_patch;
    }
    const Patch& out = patches[size_t(s.output)];
    REQUIRE(out.r == plan.out);
    for (int64_t y = out.r.h.lo; y < out.r.h.hi; ++y)
      for (int64_t x = out.r.w.lo; x < out.r.w.hi; ++x)
        stitched.at(y, x) = out.at(y, x);
  }
  CHECK(stray == 0);
  CHECK(wrong_patch == 0);
  int64_t mismatches = 0;
  for (size_t k = 0; k < ref.v.size(); ++k)
    if (!(stitched.v[k] == ref.v[k])) ++mismatches;
  CHECK(mismatches == 0);
  return idle_op;
}

// Grids of 1x1 up to 8x8 (capped by the output), including counts that do not divide it.
std::vector<Tiling> grids(const Segment& s, Rng& rng, int extra) {
  const SegOp& out = s.ops[size_t(s.output)];
  std::vector<Tiling> ts;
  const int64_t max_r = std::min<int64_t>(8, out.out_h), max_c = std::min<int64_t>(8, out.out_w);
  ts.push_back(even_tiling(out.out_h, out.out_w, max_r, max_c));
  for (int e = 0; e < extra; ++e)
    ts.push_back(even_tiling(out.out_h, out.out_w, rng.uniform(1, max_r), rng.uniform(1, max_c)));
  return ts;
}

} // namespace

TEST_CASE("one windowed op over every window: strides 1..3, paddings 0..2, dilations 1..2, "
          "kernels 1..5") {
  Rng rng{7};
  int runs = 0;
  for (int64_t k = 1; k <= 5; ++k)
    for (int64_t st = 1; st <= 3; ++st)
      for (int64_t p = 0; p <= 2; ++p)
        for (int64_t d = 1; d <= 2; ++d)
          for (int64_t n : {1, 3, 5, 9, 13}) {
            const Window w{k, st, p, d};
            if (window_out(w, n) < 1) continue;
            // A conv with this window on h and a different one on w, then the same window again
            // (a halo through two ops).
            TestSeg t;
            t.seg.in_h = n;
            t.seg.in_w = 11;
            const Window other{3, 1, 1, 1};
            const int a =
                t.add_op(Kind::conv, {-1}, w, other, false, 1, random_weights(rng, w, other));
            if (window_out(w, t.side(a, 0)) >= 1)
              t.add_op(Kind::conv, {a}, w, w.padding <= 1 ? w : other, false, 1,
                       random_weights(rng, w, w.padding <= 1 ? w : other));
            for (const Tiling& tiling : grids(t.seg, rng, 2)) {
              check_exact(t, tiling, rng);
              ++runs;
            }
          }
  CHECK(runs > 500);
}

TEST_CASE("pooling: max, average with and without the padding, floor and ceil mode") {
  Rng rng{8};
  int ceil_extra = 0, runs = 0;
  for (Kind kind : {Kind::max_pool, Kind::avg_pool_incl, Kind::avg_pool_excl})
    for (int64_t k = 1; k <= 4; ++k)
      for (int64_t st = 1; st <= 3; ++st)
        for (int64_t p = 0; p <= k / 2; ++p)
          for (int64_t n : {1, 2, 5, 7, 10, 15})
            for (bool ceil_mode : {false, true}) {
              const Window w{k, st, p, kind == Kind::max_pool ? rng.uniform(1, 2) : 1};
              if (window_out(w, n) < 1) continue;
              TestSeg t;
              t.seg.in_h = n;
              t.seg.in_w = n + 2;
              // conv3x3 first, so the pool's halo is computed data, not the input.
              const int c = t.add_op(Kind::conv, {-1}, square(3, 1, 1), square(3, 1, 1), false, 1,
                                     random_weights(rng, square(3), square(3)));
              const int pool = t.add_op(kind, {c}, w, w, ceil_mode);
              if (t.seg.ops[size_t(pool)].out_h > window_out(w, n)) ++ceil_extra;
              for (const Tiling& tiling : grids(t.seg, rng, 2)) {
                check_exact(t, tiling, rng);
                ++runs;
              }
            }
  CHECK(ceil_extra > 50); // ceil mode adding a last window that hangs past the image
  CHECK(runs > 1000);
}

TEST_CASE("add of branches with different receptive fields: the residual shape") {
  Rng rng{9};
  for (int64_t n : {7, 9, 15, 21})
    for (int64_t st = 1; st <= 3; ++st) {
      // x -> conv3x3 (stride st, pad 1) -> conv3x3 (pad 1); x -> conv1x1 (stride st); add;
      // relu; then a second block on top.
      TestSeg t;
      t.seg.in_h = n;
      t.seg.in_w = n + 4;
      int x = -1;
      for (int block = 0; block < 2; ++block) {
        const Window a = square(3, block == 0 ? st : 1, 1), b = square(3, 1, 1),
                     sc = square(1, block == 0 ? st : 1);
        const int c1 = t.add_op(Kind::conv, {x}, a, a, false, 1, random_weights(rng, a, a));
        const int c2 = t.add_op(Kind::conv, {c1}, b, b, false, 1, random_weights(rng, b, b));
        const int c3 = t.add_op(Kind::conv, {x}, sc, sc, false, 1, {2.0});
        const int sum = t.add_op(Kind::add, {c2, c3}, {}, {});
        x = t.add_op(Kind::relu, {sum}, {}, {});
      }
      for (const Tiling& tiling : grids(t.seg, rng, 4))
        check_exact(t, tiling, rng);
    }
}

TEST_CASE("random segments: every tile exact") {
  Rng rng{31};
  int ops = 0, ceil_pools = 0, adds = 0, idle = 0;
  for (int iter = 0; iter < 1000; ++iter) {
    const TestSeg t = random_segment(rng);
    CAPTURE(iter);
    for (size_t i = 0; i < t.seg.ops.size(); ++i) {
      const SegOp& op = t.seg.ops[i];
      ++ops;
      if (t.kinds[i] == Kind::add) ++adds;
      if (op.out_h > window_out(op.window[0], t.side(op.inputs[0], 0))) ++ceil_pools;
    }
    const SegOp& out = t.seg.ops[size_t(t.seg.output)];
    std::vector<Tiling> ts = grids(t.seg, rng, 2);
    ts.push_back(
        sized_tiling(out.out_h, out.out_w, rng.uniform(1, out.out_h), rng.uniform(1, out.out_w)));
    for (const Tiling& tiling : ts)
      idle += check_exact(t, tiling, rng);
  }
  CHECK(idle > 0); // tiles where an op feeding the output computes nothing
  CHECK(ops > 3000);
  CHECK(adds > 300);
  CHECK(ceil_pools > 40);
}
