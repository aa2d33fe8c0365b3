// Segments for the tiling tests: a builder that knows what each op computes, random segments
// from a fixed seed, VGG16's feature extractor, and a tiny reference executor (one channel,
// fp64) that runs a segment whole or tile by tile.
#pragma once

#include "runtime/op.hpp"
#include "schedules/tiling.hpp"
#include "tests/unit/rng.hpp"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

namespace kiln::sched::testing {

// The out size kiln's ops give a window of the planner: runtime's one output-size rule.
inline int64_t window_out(const Window& w, int64_t n, bool ceil_mode = false) {
  return kiln::window_out(n, w.kernel, w.stride, w.padding, w.dilation, ceil_mode);
}

enum class Kind { conv, max_pool, avg_pool_incl, avg_pool_excl, scale, relu, add };

// A segment plus what each op computes (for the executor).
struct TestSeg {
  Segment seg;
  std::vector<Kind> kinds;
  std::vector<std::vector<double>> weights; // conv: kernel_h * kernel_w integers

  int64_t side(int v, int axis) const {
    if (v < 0) return axis == 0 ? seg.in_h : seg.in_w;
    const SegOp& op = seg.ops[size_t(v)];
    return axis == 0 ? op.out_h : op.out_w;
  }
  // Appends an op; its out sizes are window_out of its first input (ceil mode if asked).
  int add_op(Kind kind, std::vector<int> inputs, Window h, Window w, bool ceil_mode = false,
             int64_t channels = 1, std::vector<double> wgt = {}) {
    SegOp op;
    op.name = "op" + std::to_string(seg.ops.size());
    op.window = {h, w};
    op.inputs = std::move(inputs);
    op.channels = channels;
    op.element_bytes = seg.element_bytes;
    op.out_h = window_out(h, side(op.inputs[0], 0), ceil_mode);
    op.out_w = window_out(w, side(op.inputs[0], 1), ceil_mode);
    op.pool_max_like = kind == Kind::max_pool;
    op.backward_reads_input = kind == Kind::conv || kind == Kind::max_pool || kind == Kind::scale;
    op.backward_reads_output = kind == Kind::relu;
    seg.ops.push_back(op);
    kinds.push_back(kind);
    weights.push_back(std::move(wgt));
    seg.output = int(seg.ops.size()) - 1;
    return seg.output;
  }
};

inline Window square(int64_t k, int64_t s = 1, int64_t p = 0, int64_t d = 1) {
  return {k, s, p, d};
}

// VGG16's feature extractor as one segment: 13 conv3x3 pad 1 (ReLU fused), 2x2 max pools
// after convs 2, 4, 7, 10 and 13; f32.
inline TestSeg vgg16(int64_t side_px) {
  TestSeg t;
  t.seg.in_h = t.seg.in_w = side_px;
  t.seg.in_channels = 3;
  t.seg.element_bytes = 4;
  const int64_t widths[] = {64, 64,  0,   128, 128, 0,   256, 256, 256,
                            0,  512, 512, 512, 0,   512, 512, 512, 0};
  int v = -1;
  for (int64_t c : widths) {
    if (c == 0)
      v = t.add_op(Kind::max_pool, {v}, square(2, 2), square(2, 2), false,
                   t.seg.ops[size_t(v)].channels);
    else
      v = t.add_op(Kind::conv, {v}, square(3, 1, 1), square(3, 1, 1), false, c,
                   std::vector<double>(9, 1.0));
  }
  return t;
}

// A random window that fits an input of n, or none after a few tries.
inline bool random_window(Rng& rng, int64_t n, bool pool, bool dilate, Window& w) {
  for (int tries = 0; tries < 20; ++tries) {
    w.kernel = rng.uniform(1, pool ? 4 : 5);
    w.stride = rng.uniform(1, 3);
    w.padding = pool ? rng.uniform(0, w.kernel / 2) : rng.uniform(0, 2);
    w.dilation = dilate ? rng.uniform(1, 2) : 1;
    if (window_out(w, n) >= 1) return true;
  }
  return false;
}

inline std::vector<double> random_weights(Rng& rng, const Window& h, const Window& w) {
  std::vector<double> wgt(size_t(h.kernel * w.kernel));
  for (double& x : wgt)
    x = double(rng.uniform(-2, 2));
  return wgt;
}

// 1 to max_ops ops over an input of 1..max_side per axis (odd sizes more often): convs,
// pools (max; average both ways; floor and ceil mode), elementwise, adds of equal-size
// values and residual blocks (conv3x3 -> conv3x3 plus a 1x1 branch, strided or not). Windows
// differ per axis. Usually the last op is the output; sometimes an earlier one (the ops
// after it compute nothing).
inline TestSeg random_segment(Rng& rng, int max_ops = 7, int64_t max_side = 25) {
  TestSeg t;
  auto side = [&]() {
    const int64_t n = rng.uniform(1, max_side);
    return rng.chance(70) ? (n | 1) : n;
  };
  t.seg.in_h = side();
  t.seg.in_w = side();
  t.seg.in_channels = rng.uniform(1, 4);
  t.seg.element_bytes = rng.chance(50) ? 4 : 2;
  const int target = int(rng.uniform(1, max_ops));
  auto channels = [&]() { return rng.uniform(1, 8); };
  while (int(t.seg.ops.size()) < target) {
    const int last = int(t.seg.ops.size()) - 1;
    // Mostly the latest value, sometimes any earlier one (branches, multiple consumers).
    const int src = rng.chance(70) ? last : int(rng.uniform(-1, last));
    const int64_t nh = t.side(src, 0), nw = t.side(src, 1);
    const int64_t what = rng.uniform(0, 99);
    Window h, w;
    if (what < 30) {
      if (!random_window(rng, nh, false, true, h) || !random_window(rng, nw, false, true, w))
        continue;
      t.add_op(Kind::conv, {src}, h, w, false, channels(), random_weights(rng, h, w));
    } else if (what < 50) {
      const bool is_max = rng.chance(50);
      if (!random_window(rng, nh, true, is_max, h) || !random_window(rng, nw, true, is_max, w))
        continue;
      const Kind kind =
          is_max ? Kind::max_pool : (rng.chance(50) ? Kind::avg_pool_incl : Kind::avg_pool_excl);
      t.add_op(kind, {src}, h, w, rng.chance(50),
               src < 0 ? t.seg.in_channels : t.seg.ops[size_t(src)].channels);
    } else if (what < 62) {
      t.add_op(rng.chance(50) ? Kind::relu : Kind::scale, {src}, {}, {}, false, channels());
    } else if (what < 80) {
      // Add of two values of equal size; else a 1x1 conv branch added to its source.
      std::vector<int> same;
      for (int v = -1; v <= last; ++v)
        if (v != src && t.side(v, 0) == nh && t.side(v, 1) == nw) same.push_back(v);
      if (!same.empty()) {
        const int other = same[size_t(rng.uniform(0, int64_t(same.size()) - 1))];
        t.add_op(Kind::add, {src, other}, {}, {}, false, channels());
      } else {
        const int b = t.add_op(Kind::conv, {src}, {}, {}, false, channels(), {1.0});
        t.add_op(Kind::add, {b, src}, {}, {}, false, channels());
      }
    } else {
      // Residual block: conv3x3 (stride s, pad 1) -> conv3x3 (pad 1), plus conv1x1 stride s.
      const int64_t s = rng.uniform(1, 2);
      const Window a = square(3, s, 1), b = square(3, 1, 1), sc = square(1, s, 0);
      const int c1 =
          t.add_op(Kind::conv, {src}, a, a, false, channels(), random_weights(rng, a, a));
      const int c2 = t.add_op(Kind::conv, {c1}, b, b, false, channels(), random_weights(rng, b, b));
      const int c3 =
          t.add_op(Kind::conv, {src}, sc, sc, false, channels(), {double(rng.uniform(1, 3))});
      t.add_op(Kind::add, {c2, c3}, {}, {}, false, channels());
    }
  }
  t.seg.output = rng.chance(85) ? int(t.seg.ops.size()) - 1
                                : int(rng.uniform(0, int64_t(t.seg.ops.size()) - 1));
  return t;
}

// A dense 2D array of one channel.
struct Image {
  int64_t h = 0, w = 0;
  std::vector<double> v;
  double& at(int64_t y, int64_t x) { return v[size_t(y * w + x)]; }
  double at(int64_t y, int64_t x) const { return v[size_t(y * w + x)]; }
};

inline Image random_image(Rng& rng, int64_t h, int64_t w) {
  Image im{h, w, std::vector<double>(size_t(h * w))};
  for (double& x : im.v)
    x = double(rng.uniform(-4, 4));
  return im;
}

// Reads input k of an op at a coordinate inside the image.
using Reader = std::function<double(int k, int64_t y, int64_t x)>;

// Op i at output (y, x). Coordinates outside the image are padding: zero for convolution
// and average pooling, skipped by max pooling; they are never read. Average pooling divides
// by the window positions inside the padded image [-p, n + p) (count_include_pad) or inside
// the image. The same code runs whole and tiled, so results must match bit for bit.
inline double compute_point(const TestSeg& t, int i, int64_t y, int64_t x, const Reader& read) {
  const SegOp& op = t.seg.ops[size_t(i)];
  const Window& wh = op.window[0];
  const Window& ww = op.window[1];
  const int64_t nh = t.side(op.inputs[0], 0), nw = t.side(op.inputs[0], 1);
  const Kind kind = t.kinds[size_t(i)];
  switch (kind) {
  case Kind::scale: return 3 * read(0, y, x) - 1;
  case Kind::relu: return std::max(read(0, y, x), 0.0);
  case Kind::add: {
    double s = 0;
    for (int k = 0; k < int(op.inputs.size()); ++k)
      s += read(k, y, x);
    return s;
  }
  default: break;
  }
  double acc = kind == Kind::max_pool ? -std::numeric_limits<double>::infinity() : 0.0;
  int64_t padded = 0, inside = 0;
  for (int64_t a = 0; a < wh.kernel; ++a)
    for (int64_t b = 0; b < ww.kernel; ++b) {
      const int64_t iy = y * wh.stride - wh.padding + a * wh.dilation;
      const int64_t ix = x * ww.stride - ww.padding + b * ww.dilation;
      if (iy >= -wh.padding && iy < nh + wh.padding && ix >= -ww.padding && ix < nw + ww.padding)
        ++padded;
      if (iy < 0 || iy >= nh || ix < 0 || ix >= nw) continue;
      ++inside;
      const double v = read(0, iy, ix);
      if (kind == Kind::conv)
        acc += t.weights[size_t(i)][size_t(a * ww.kernel + b)] * v;
      else if (kind == Kind::max_pool)
        acc = std::max(acc, v);
      else
        acc += v;
    }
  if (kind == Kind::max_pool) return inside ? acc : 0.0;
  if (kind == Kind::avg_pool_incl) return padded ? acc / double(padded) : 0.0;
  if (kind == Kind::avg_pool_excl) return inside ? acc / double(inside) : 0.0;
  return acc;
}

// Every op over its whole output.
inline std::vector<Image> run_whole(const TestSeg& t, const Image& input) {
  std::vector<Image> out;
  for (int i = 0; i < int(t.seg.ops.size()); ++i) {
    const SegOp& op = t.seg.ops[size_t(i)];
    Image im{op.out_h, op.out_w, std::vector<double>(size_t(op.out_h * op.out_w))};
    const Reader read = [&](int k, int64_t y, int64_t x) {
      const int v = op.inputs[size_t(k)];
      return v < 0 ? input.at(y, x) : out[size_t(v)].at(y, x);
    };
    for (int64_t y = 0; y < op.out_h; ++y)
      for (int64_t x = 0; x < op.out_w; ++x)
        im.at(y, x) = compute_point(t, i, y, x, read);
    out.push_back(std::move(im));
  }
  return out;
}

// A value's data over one region.
struct Patch {
  Region r;
  std::vector<double> v;
  double at(int64_t y, int64_t x) const {
    return v[size_t((y - r.h.lo) * r.w.size() + (x - r.w.lo))];
  }
};

// One tile: copies its input region, computes each op on its region reading only the
// regions this tile computed for its inputs, and returns every op's patch. `stray` counts
// reads of in-image coordinates outside the region of the value read (each would be data
// the tile does not have).
inline std::vector<Patch> run_tile(const TestSeg& t, const TilePlan& plan, const Image& input,
                                   int64_t& stray) {
  Patch in{plan.input, {}};
  for (int64_t y = plan.input.h.lo; y < plan.input.h.hi; ++y)
    for (int64_t x = plan.input.w.lo; x < plan.input.w.hi; ++x)
      in.v.push_back(input.at(y, x));
  std::vector<Patch> vals;
  for (int i = 0; i < int(t.seg.ops.size()); ++i) {
    const SegOp& op = t.seg.ops[size_t(i)];
    const Region r = plan.op_out[size_t(i)];
    Patch p{r, {}};
    const Reader read = [&](int k, int64_t y, int64_t x) {
      const int v = op.inputs[size_t(k)];
      const Patch& src = v < 0 ? in : vals[size_t(v)];
      if (!contains(src.r, {{y, y + 1}, {x, x + 1}})) {
        ++stray;
        return std::numeric_limits<double>::quiet_NaN();
      }
      return src.at(y, x);
    };
    if (!r.empty())
      for (int64_t y = r.h.lo; y < r.h.hi; ++y)
        for (int64_t x = r.w.lo; x < r.w.hi; ++x)
          p.v.push_back(compute_point(t, i, y, x, read));
    vals.push_back(std::move(p));
  }
  return vals;
}

} // namespace kiln::sched::testing
