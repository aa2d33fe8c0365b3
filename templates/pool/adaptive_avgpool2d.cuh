// Adaptive average pooling over [N, C, H, W] (NCHW or NHWC) to [N, C, OH, OW], PyTorch's
// windows (pool/window.cuh); global average pooling is the OH = OW = 1 case.
//  - adaptive_avgpool2d_direct: one thread per output element, its window summed in
//    row-major order.
//  - adaptive_avgpool2d_reduce: R threads per output element (R a power of two): each sums
//    every R-th element of the window, then a fixed tree adds the R partial sums (warp
//    shuffles when the R threads are consecutive lanes, else shared memory). For large
//    windows (global pooling). NCHW: the R threads of an output are consecutive (R <= 32:
//    a warp holds 32/R outputs; R > 32: one output per block, R = THREADS); NHWC: an output
//    per thread column, G = THREADS/R consecutive outputs (channels) per block, so that
//    each step of the window reads G consecutive channels.
//  - adaptive_avgpool2d_backward: a gather: each dx element sums dy / window size over the
//    windows containing it (output rows, then columns, ascending).
//
// Cfg: T, N, C, H, W (x or dx), OH, OW (y or dy), NHWC, THREADS; reduce: R;
//      backward: ACCUMULATE (add into dx).
// Arguments, in order: forward: x, y · backward: dy, dx.
// Grid: direct and backward: any, 1-D (grid-stride loop); reduce: exactly
//      ceil(N*C*OH*OW / (THREADS/R)) 1-D blocks.
#pragma once

#include "pool/pool_tensors.cuh"

namespace kiln::pool {

template <class Cfg> KILN_FN void adaptive_avgpool2d_direct(const KernelArgs& a) {
  using T = typename Cfg::T;
  using X = PoolX<Cfg>;
  using Y = PoolY<Cfg>;
  using I = typename X::index;
  const Global<const T> x = arg<const T>(a, 0);
  const Global<T> y = arg<T>(a, 1);
  for (I o = grid_first<I, Cfg::THREADS>(); o < Y::count; o += grid_step<I, Cfg::THREADS>()) {
    const Coord4<I> p = Y::coord(o);
    const Span h = adaptive_span<Cfg::H, Cfg::OH>(p.h), w = adaptive_span<Cfg::W, Cfg::OW>(p.w);
    const Global<const T> plane = x + X::plane(p.n, p.c);
    float s = 0.f;
    for (int ih = h.lo; ih < h.hi; ++ih)
      for (int iw = w.lo; iw < w.hi; ++iw)
        s += to_float(plane[I(ih) * X::row + I(iw) * X::col]);
    y[o] = from_float<T>(s / float((h.hi - h.lo) * (w.hi - w.lo)));
  }
}

template <class Cfg> KILN_FN void adaptive_avgpool2d_reduce(const KernelArgs& a) {
  using T = typename Cfg::T;
  using X = PoolX<Cfg>;
  using Y = PoolY<Cfg>;
  using I = typename X::index;
  constexpr int R = Cfg::R, G = Cfg::THREADS / R;
  static_assert(R >= 1 && (R & (R - 1)) == 0 && Cfg::THREADS % R == 0, "R: a power of two");
  static_assert(Cfg::NHWC || R <= 32 || G == 1, "NCHW: R <= 32 or one output per block");
  static_assert(Cfg::THREADS % 32 == 0, "full warps (shuffles)");

  const int t = int(threadIdx.x);
  const int g = Cfg::NHWC ? t % G : t / R, m = Cfg::NHWC ? t / G : t % R;
  const I o = I(blockIdx.x) * G + g;
  const Global<const T> x = arg<const T>(a, 0);
  const Global<T> y = arg<T>(a, 1);
  float s = 0.f, count = 1.f;
  if (o < Y::count) {
    const Coord4<I> p = Y::coord(o);
    const Span h = adaptive_span<Cfg::H, Cfg::OH>(p.h), w = adaptive_span<Cfg::W, Cfg::OW>(p.w);
    const int ww = w.hi - w.lo, size = (h.hi - h.lo) * ww;
    const Global<const T> plane = x + X::plane(p.n, p.c);
    for (int e = m; e < size; e += R)
      s += to_float(plane[I(h.lo + e / ww) * X::row + I(w.lo + e % ww) * X::col]);
    count = float(size);
  }
  if constexpr (!Cfg::NHWC) { // the R threads of an output are consecutive lanes
    for (int d = min_of(R, 32) / 2; d >= 1; d /= 2)
      s += shfl_xor(s, d);
    if constexpr (R > 32) { // one output per block: add the warps' sums in warp order
      constexpr int partials = Cfg::THREADS / 32;
      KILN_SHARED_ARRAY(float, partial, partials);
      if (lane_id() == 0) partial[warp_id()] = s;
      sync_threads();
      if (warp_id() == 0) {
        s = lane_id() < partials ? float(partial[lane_id()]) : 0.f;
        for (int d = 16; d >= 1; d /= 2)
          s += shfl_xor(s, d);
      }
    }
    if (m == 0 && o < Y::count) y[o] = from_float<T>(s / count);
  } else {
    KILN_SHARED_ARRAY(float, partial, Cfg::THREADS);
    partial[t] = s;
    for (int d = R / 2; d >= 1; d /= 2) {
      sync_threads();
      if (m < d) partial[t] = float(partial[t]) + float(partial[t + d * G]);
    }
    if (m == 0 && o < Y::count) y[o] = from_float<T>(float(partial[t]) / count);
  }
}

template <class Cfg> KILN_FN void adaptive_avgpool2d_backward(const KernelArgs& a) {
  using T = typename Cfg::T;
  using X = PoolX<Cfg>;
  using Y = PoolY<Cfg>;
  using I = typename X::index;
  const Global<const T> dy = arg<const T>(a, 0);
  const Global<T> dx = arg<T>(a, 1);
  for (I i = grid_first<I, Cfg::THREADS>(); i < X::count; i += grid_step<I, Cfg::THREADS>()) {
    const Coord4<I> p = X::coord(i);
    const Cover ch = adaptive_cover<Cfg::H, Cfg::OH>(p.h),
                cw = adaptive_cover<Cfg::W, Cfg::OW>(p.w);
    const Global<const T> dyp = dy + Y::plane(p.n, p.c);
    float g = 0.f;
    for (int oh = ch.lo; oh < ch.hi; ++oh) {
      const Span h = adaptive_span<Cfg::H, Cfg::OH>(oh);
      for (int ow = cw.lo; ow < cw.hi; ++ow) {
        const Span w = adaptive_span<Cfg::W, Cfg::OW>(ow);
        g += to_float(dyp[I(oh) * Y::row + I(ow) * Y::col]) / float((h.hi - h.lo) * (w.hi - w.lo));
      }
    }
    store_grad<Cfg::ACCUMULATE>(dx, i, g);
  }
}

} // namespace kiln::pool
