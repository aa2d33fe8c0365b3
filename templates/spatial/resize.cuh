// Resize of [N, C, H, W] (NCHW or NHWC) to [N, C, OH, OW] over H and W, as ONNX's Resize
// (and runtime/cpu/resize_taps.hpp) defines it: each output index o along an axis reads
// source coordinate src(o) (COORD: asymmetric o / s, half_pixel (o + 0.5) / s - 0.5,
// pytorch_half_pixel the same but 0 for a 1-long output, align_corners o * (in - 1) /
// (len - 1); s = SCALE_H or SCALE_W, len = LENGTH_H or LENGTH_W: in * the given scale (not
// rounded, as ONNX has it) or the output's length; in float); nearest (MODE 0) rounds it by NEAREST
// (floor, round_prefer_floor, round_prefer_ceil, ceil) and clamps; linear (MODE 1) clamps
// it into [0, in - 1] and blends the two neighbours (bilinear over both axes).
// The backward is a gather, deterministic: each dx element finds, per axis, the contiguous
// range of outputs whose taps reach it (taps are monotone in o: two binary searches) and
// sums dy times both axes' weights over it, rows then columns.
// One thread per element of the written tensor, in its memory order.
//
// Cfg: T, N, C, H, W (x or dx), OH, OW, SCALE_H, SCALE_W, LENGTH_H, LENGTH_W (float), MODE,
//      COORD, NEAREST, NHWC,
//      THREADS; backward: ACCUMULATE.
// Arguments, in order: forward: x, y · backward: dy, dx.
// Grid: any, 1-D blocks of THREADS threads (a grid-stride loop).
#pragma once

#include "common/grid_stride.cuh"
#include "common/tensor4.cuh"

namespace kiln::spatial {

// An axis' taps for output o: y[o] = w0 * x[i0] + w1 * x[i1].
struct ResizeTap {
  int i0, i1;
  float w0, w1;
};

template <int MODE, int COORD, int NEAREST, int IN, int OUT>
KILN_FN ResizeTap resize_tap(int o, float scale, float length) {
  const float of = float(o);
  float src;
  if (COORD == 0)
    src = of / scale;
  else if (COORD == 1 || COORD == 2)
    src = OUT > 1 || COORD == 1 ? (of + 0.5f) / scale - 0.5f : 0.f;
  else
    src = length == 1.f ? 0.f : of * float(IN - 1) / (length - 1.f);
  if (MODE == 0) {
    const float f = floorf(src), frac = src - f;
    float r = f;
    if (NEAREST == 3)
      r = ceilf(src);
    else if (NEAREST == 1)
      r = frac <= 0.5f ? f : f + 1.f;
    else if (NEAREST == 2)
      r = frac < 0.5f ? f : f + 1.f;
    int i = int(r);
    i = i < 0 ? 0 : i > IN - 1 ? IN - 1 : i;
    return {i, i, 1.f, 0.f};
  }
  const float c = src < 0.f ? 0.f : src > float(IN - 1) ? float(IN - 1) : src;
  int i0 = int(c);
  i0 = i0 > IN - 1 ? IN - 1 : i0;
  const int i1 = i0 + 1 > IN - 1 ? IN - 1 : i0 + 1;
  const float l1 = c - float(i0);
  return {i0, i1, 1.f - l1, l1};
}

// The weight output o gives input i (0 when its taps miss it).
KILN_FN float resize_weight(const ResizeTap& t, int i) {
  return (t.i0 == i ? t.w0 : 0.f) + (t.i1 == i ? t.w1 : 0.f);
}

// [lo, hi): the outputs whose taps reach input i. i0 and i1 never decrease with o, so these
// are the outputs from the first with i1 >= i to the last with i0 <= i.
template <int MODE, int COORD, int NEAREST, int IN, int OUT>
KILN_FN void resize_range(int i, float scale, float length, int& lo, int& hi) {
  int a = 0, b = OUT; // first o with i1(o) >= i
  while (a < b) {
    const int m = (a + b) / 2;
    if (resize_tap<MODE, COORD, NEAREST, IN, OUT>(m, scale, length).i1 >= i)
      b = m;
    else
      a = m + 1;
  }
  lo = a;
  b = OUT; // first o with i0(o) > i
  while (a < b) {
    const int m = (a + b) / 2;
    if (resize_tap<MODE, COORD, NEAREST, IN, OUT>(m, scale, length).i0 > i)
      b = m;
    else
      a = m + 1;
  }
  hi = a;
}

template <class Cfg>
using resize_index_t = index_t<i64(Cfg::N) * Cfg::C*(i64(Cfg::H) * Cfg::W > i64(Cfg::OH) * Cfg::OW
                                                         ? i64(Cfg::H) * Cfg::W
                                                         : i64(Cfg::OH) * Cfg::OW)>;

template <class Cfg> KILN_FN void resize_forward(const KernelArgs& a) {
  using T = typename Cfg::T;
  using I = resize_index_t<Cfg>;
  using X = Tensor4<Cfg::NHWC, Cfg::N, Cfg::C, Cfg::H, Cfg::W, I>;
  using Y = Tensor4<Cfg::NHWC, Cfg::N, Cfg::C, Cfg::OH, Cfg::OW, I>;
  const Global<const T> x = arg<const T>(a, 0);
  const Global<T> y = arg<T>(a, 1);
  for (I o = grid_first<I, Cfg::THREADS>(); o < Y::count; o += grid_step<I, Cfg::THREADS>()) {
    const Coord4<I> p = Y::coord(o);
    const ResizeTap h = resize_tap<Cfg::MODE, Cfg::COORD, Cfg::NEAREST, Cfg::H, Cfg::OH>(
        int(p.h), Cfg::SCALE_H, Cfg::LENGTH_H);
    const ResizeTap w = resize_tap<Cfg::MODE, Cfg::COORD, Cfg::NEAREST, Cfg::W, Cfg::OW>(
        int(p.w), Cfg::SCALE_W, Cfg::LENGTH_W);
    if (Cfg::MODE == 0) {
      y[o] = x[X::at(p.n, p.c, I(h.i0), I(w.i0))];
      continue;
    }
    const auto row = [&](int i) {
      return w.w0 * to_float(x[X::at(p.n, p.c, I(i), I(w.i0))]) +
             w.w1 * to_float(x[X::at(p.n, p.c, I(i), I(w.i1))]);
    };
    y[o] = from_float<T>(h.w0 * row(h.i0) + h.w1 * row(h.i1));
  }
}

template <class Cfg> KILN_FN void resize_backward(const KernelArgs& a) {
  using T = typename Cfg::T;
  using I = resize_index_t<Cfg>;
  using X = Tensor4<Cfg::NHWC, Cfg::N, Cfg::C, Cfg::H, Cfg::W, I>;
  using Y = Tensor4<Cfg::NHWC, Cfg::N, Cfg::C, Cfg::OH, Cfg::OW, I>;
  constexpr int M = Cfg::MODE, CO = Cfg::COORD, NE = Cfg::NEAREST;
  const Global<const T> dy = arg<const T>(a, 0);
  const Global<T> dx = arg<T>(a, 1);
  for (I i = grid_first<I, Cfg::THREADS>(); i < X::count; i += grid_step<I, Cfg::THREADS>()) {
    const Coord4<I> p = X::coord(i);
    int h_lo, h_hi, w_lo, w_hi;
    resize_range<M, CO, NE, Cfg::H, Cfg::OH>(int(p.h), Cfg::SCALE_H, Cfg::LENGTH_H, h_lo, h_hi);
    resize_range<M, CO, NE, Cfg::W, Cfg::OW>(int(p.w), Cfg::SCALE_W, Cfg::LENGTH_W, w_lo, w_hi);
    float g = 0.f;
    for (int oh = h_lo; oh < h_hi; ++oh) {
      const float wh = resize_weight(
          resize_tap<M, CO, NE, Cfg::H, Cfg::OH>(oh, Cfg::SCALE_H, Cfg::LENGTH_H), int(p.h));
      if (wh == 0.f) continue;
      float r = 0.f;
      for (int ow = w_lo; ow < w_hi; ++ow) {
        const float ww = resize_weight(
            resize_tap<M, CO, NE, Cfg::W, Cfg::OW>(ow, Cfg::SCALE_W, Cfg::LENGTH_W), int(p.w));
        r += ww * to_float(dy[Y::at(p.n, p.c, I(oh), I(ow))]);
      }
      g += wh * r;
    }
    store_grad<Cfg::ACCUMULATE>(dx, i, g);
  }
}

} // namespace kiln::spatial
