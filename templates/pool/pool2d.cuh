// Max and average pooling forward over [N, C, H, W] (NCHW or NHWC), PyTorch's semantics:
// padding, ceil_mode (in OH, OW), count_include_pad; maxpool takes the first maximum of
// each window in row-major order (a NaN wins). One thread per output element, in the
// output's memory order (NHWC: consecutive threads read consecutive channels); the window
// is read straight from global memory (overlapping windows hit the L1 cache).
//
// Cfg: T (element type), MAX (max, else average), N, C, H, W (input), OH, OW (output),
//      KH, KW, SH, SW, PH, PW, PH_END, PW_END (window, stride, padding before and after), COUNT_PAD
//      (average: count_include_pad), NHWC, THREADS. Every window holds at least one input element.
// Arguments, in order: x, y.
// Grid: any, 1-D blocks of THREADS threads (a grid-stride loop covers y).
#pragma once

#include "pool/pool_tensors.cuh"

namespace kiln::pool {

template <class Cfg> KILN_FN void pool2d_forward(const KernelArgs& a) {
  using T = typename Cfg::T;
  using X = PoolX<Cfg>;
  using Y = PoolY<Cfg>;
  using I = typename X::index;
  const Global<const T> x = arg<const T>(a, 0);
  const Global<T> y = arg<T>(a, 1);
  for (I o = grid_first<I, Cfg::THREADS>(); o < Y::count; o += grid_step<I, Cfg::THREADS>()) {
    const Coord4<I> p = Y::coord(o);
    const Span h = pool_span<Cfg::KH, Cfg::SH, Cfg::PH, Cfg::PH_END, Cfg::H>(p.h);
    const Span w = pool_span<Cfg::KW, Cfg::SW, Cfg::PW, Cfg::PW_END, Cfg::W>(p.w);
    const Global<const T> plane = x + X::plane(p.n, p.c);
    float v;
    if constexpr (Cfg::MAX) {
      window_argmax<X::row, X::col, I>(plane, h, w, v);
    } else {
      v = 0.f;
      for (int ih = h.lo; ih < h.hi; ++ih)
        for (int iw = w.lo; iw < w.hi; ++iw)
          v += to_float(plane[I(ih) * X::row + I(iw) * X::col]);
      v /= pool_divisor<Cfg::COUNT_PAD>(h, w);
    }
    y[o] = from_float<T>(v);
  }
}

} // namespace kiln::pool
