// Nearest-neighbour upsampling of [N, C, H, W] (NCHW or NHWC) by an integer scale S:
// y[n, c, oh, ow] = x[n, c, oh / S, ow / S]; the backward sums each S x S block of dy (its
// rows, then the columns of each row, as the reference), a gather: deterministic.
// One thread per element of the written tensor, in its memory order.
//
// Cfg: T, N, C, H, W (x or dx), S (scale), NHWC, THREADS; backward: ACCUMULATE.
// Arguments, in order: forward: x, y · backward: dy, dx.
// Grid: any, 1-D blocks of THREADS threads (a grid-stride loop).
#pragma once

#include "common/grid_stride.cuh"
#include "common/tensor4.cuh"

namespace kiln::spatial {

template <class Cfg>
using upsample_index_t = index_t<i64(Cfg::N) * Cfg::C * Cfg::H * Cfg::W * Cfg::S * Cfg::S>;

template <class Cfg> KILN_FN void upsample2d_forward(const KernelArgs& a) {
  using T = typename Cfg::T;
  using I = upsample_index_t<Cfg>;
  using X = Tensor4<Cfg::NHWC, Cfg::N, Cfg::C, Cfg::H, Cfg::W, I>;
  using Y = Tensor4<Cfg::NHWC, Cfg::N, Cfg::C, Cfg::H * Cfg::S, Cfg::W * Cfg::S, I>;
  const Global<const T> x = arg<const T>(a, 0);
  const Global<T> y = arg<T>(a, 1);
  for (I o = grid_first<I, Cfg::THREADS>(); o < Y::count; o += grid_step<I, Cfg::THREADS>()) {
    const Coord4<I> p = Y::coord(o);
    y[o] = x[X::at(p.n, p.c, p.h / Cfg::S, p.w / Cfg::S)];
  }
}

template <class Cfg> KILN_FN void upsample2d_backward(const KernelArgs& a) {
  using T = typename Cfg::T;
  using I = upsample_index_t<Cfg>;
  using X = Tensor4<Cfg::NHWC, Cfg::N, Cfg::C, Cfg::H, Cfg::W, I>;
  using Y = Tensor4<Cfg::NHWC, Cfg::N, Cfg::C, Cfg::H * Cfg::S, Cfg::W * Cfg::S, I>;
  const Global<const T> dy = arg<const T>(a, 0);
  const Global<T> dx = arg<T>(a, 1);
  for (I i = grid_first<I, Cfg::THREADS>(); i < X::count; i += grid_step<I, Cfg::THREADS>()) {
    const Coord4<I> p = X::coord(i);
    const Global<const T> block = dy + Y::at(p.n, p.c, p.h * Cfg::S, p.w * Cfg::S);
    float g = 0.f;
    for (int r = 0; r < Cfg::S; ++r)
      for (int q = 0; q < Cfg::S; ++q)
        g += to_float(block[I(r) * Y::row + I(q) * Y::col]);
    store_grad<Cfg::ACCUMULATE>(dx, i, g);
  }
}

} // namespace kiln::spatial
