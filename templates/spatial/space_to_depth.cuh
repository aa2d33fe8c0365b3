// Space to depth of x [N, C, H, W] into y [N, CY, OH, OW] with S x S blocks:
// y[n, (bh*S + bw)*C + c, i, j] = x[n, c, S*i + bh - PT, S*j + bw - PL] where that lies inside
// x, else 0; channels from S*S*C to CY are 0. x and y each NCHW or NHWC (X_NHWC, Y_NHWC): the
// main use reads a network's NCHW image (or an OIHW weight, its filters as the images) and
// writes NHWC. Each x element goes to at most one y element, so the backward is a gather,
// deterministic: dx at (h, w) is dy at (i, j) = ((h + PT) / S, (w + PL) / S), channel
// (((h + PT) % S) * S + (w + PL) % S) * C + c, or 0 where (i, j) lies outside y.
// One thread per element of the written tensor, in its memory order.
//
// Cfg: T, N, C, H, W (x or dx), S, PT, PL, OH, OW, CY, X_NHWC, Y_NHWC, THREADS;
//      backward: ACCUMULATE.
// Arguments, in order: forward: x, y · backward: dy, dx.
// Grid: any, 1-D blocks of THREADS threads (a grid-stride loop).
#pragma once

#include "common/grid_stride.cuh"
#include "common/tensor4.cuh"

namespace kiln::spatial {

// One index type for both tensors: y may be smaller than x (size drops rows) or larger.
template <class Cfg> struct SpaceToDepthShape {
  static constexpr i64 x_count = i64(Cfg::N) * Cfg::C * i64(Cfg::H) * Cfg::W;
  static constexpr i64 y_count = i64(Cfg::N) * Cfg::CY * i64(Cfg::OH) * Cfg::OW;
  using I = index_t<(x_count > y_count ? x_count : y_count)>;
  using X = Tensor4<Cfg::X_NHWC, Cfg::N, Cfg::C, Cfg::H, Cfg::W, I>;
  using Y = Tensor4<Cfg::Y_NHWC, Cfg::N, Cfg::CY, Cfg::OH, Cfg::OW, I>;
};

template <class Cfg> KILN_FN void space_to_depth_forward(const KernelArgs& a) {
  using T = typename Cfg::T;
  using I = typename SpaceToDepthShape<Cfg>::I;
  using X = typename SpaceToDepthShape<Cfg>::X;
  using Y = typename SpaceToDepthShape<Cfg>::Y;
  constexpr int S = Cfg::S, C = Cfg::C;
  const Global<const T> x = arg<const T>(a, 0);
  const Global<T> y = arg<T>(a, 1);
  for (I o = grid_first<I, Cfg::THREADS>(); o < Y::count; o += grid_step<I, Cfg::THREADS>()) {
    const Coord4<I> p = Y::coord(o);
    const int block = p.c / C, c = p.c % C; // block = bh * S + bw
    const int h = p.h * S + block / S - Cfg::PT, w = p.w * S + block % S - Cfg::PL;
    const bool inside = block < S * S && h >= 0 && h < Cfg::H && w >= 0 && w < Cfg::W;
    y[o] = inside ? x[X::at(p.n, c, h, w)] : from_float<T>(0.f);
  }
}

template <class Cfg> KILN_FN void space_to_depth_backward(const KernelArgs& a) {
  using T = typename Cfg::T;
  using I = typename SpaceToDepthShape<Cfg>::I;
  using X = typename SpaceToDepthShape<Cfg>::X;
  using Y = typename SpaceToDepthShape<Cfg>::Y;
  constexpr int S = Cfg::S, C = Cfg::C;
  const Global<const T> dy = arg<const T>(a, 0);
  const Global<T> dx = arg<T>(a, 1);
  for (I e = grid_first<I, Cfg::THREADS>(); e < X::count; e += grid_step<I, Cfg::THREADS>()) {
    const Coord4<I> p = X::coord(e);
    const int ph = p.h + Cfg::PT, pw = p.w + Cfg::PL; // in the padded input, from 0
    const int i = ph / S, j = pw / S;
    const float g = i < Cfg::OH && j < Cfg::OW
                        ? to_float(dy[Y::at(p.n, ((ph % S) * S + pw % S) * C + p.c, i, j)])
                        : 0.f;
    store_grad<Cfg::ACCUMULATE>(dx, e, g);
  }
}

} // namespace kiln::spatial
