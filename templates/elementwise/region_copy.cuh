// Copies (or adds) a spatial window of a 4-D tensor into another: the tiles of a tiled
// segment in and out of full-size tensors, and their gradients back (accumulated where
// halos of neighbouring tiles overlap). One thread per element of the window.
//
// Cfg: T, N, C, SH, SW (src spatial size), DH, DW (dst spatial size), SRC_H0, SRC_W0,
//      DST_H0, DST_W0 (window origins), EH, EW (window extent), DST_SH, DST_SW (dst's step
//      between the window's rows and columns: a strided conv's data-gradient phase
//      interleaved into dx), SRC_NHWC, DST_NHWC (each
//      tensor's layout: a network's NCHW input copied into an NHWC tile, say), ACCUMULATE,
//      THREADS.
// Arguments: src, dst. Grid: any (grid-stride loop).
#pragma once

#include "common/tensor4.cuh"

namespace kiln::elementwise {

template <class Cfg> KILN_FN void region_copy(const KernelArgs& a) {
  using T = typename Cfg::T;
  const Global<const T> src = arg<const T>(a, 0);
  const Global<T> dst = arg<T>(a, 1);
  using Window = Tensor4<Cfg::DST_NHWC, Cfg::N, Cfg::C, Cfg::EH, Cfg::EW, i64>;
  using Src = Tensor4<Cfg::SRC_NHWC, Cfg::N, Cfg::C, Cfg::SH, Cfg::SW, i64>;
  using Dst = Tensor4<Cfg::DST_NHWC, Cfg::N, Cfg::C, Cfg::DH, Cfg::DW, i64>;
  const i64 stride = i64(gridDim.x) * Cfg::THREADS;
  for (i64 e = i64(blockIdx.x) * Cfg::THREADS + threadIdx.x; e < Window::count; e += stride) {
    // Window coordinates in dst's memory order (channels fastest in NHWC): stores coalesce.
    const Coord4<i64> p = Window::coord(e);
    const i64 from = Src::at(p.n, p.c, Cfg::SRC_H0 + p.h, Cfg::SRC_W0 + p.w);
    const i64 to =
        Dst::at(p.n, p.c, Cfg::DST_H0 + p.h * Cfg::DST_SH, Cfg::DST_W0 + p.w * Cfg::DST_SW);
    float v = to_float(src[from]);
    if constexpr (Cfg::ACCUMULATE) v += to_float(dst[to]);
    dst[to] = from_float<T>(v);
  }
}

} // namespace kiln::elementwise
