// Copies (or adds) a spatial window of a 4-D tensor into another: the tiles of a tiled
// segment in and out of full-size tensors, and their gradients back (accumulated where
// halos of neighbouring tiles overlap). One thread per element of the window.
//
// Cfg: T, N, C, SH, SW (src spatial size), DH, DW (dst spatial size), SRC_H0, SRC_W0,
//      DST_H0, DST_W0 (window origins), EH, EW (window extent), SRC_NHWC, DST_NHWC (each
//      tensor's layout: a network's NCHW input copied into an NHWC tile, say), ACCUMULATE,
//      THREADS.
// Arguments: src, dst. Grid: any (grid-stride loop).
#pragma once

#include "common/kiln.cuh"

namespace kiln::elementwise {

template <class Cfg> KILN_FN void region_copy(const KernelArgs& a) {
  using T = typename Cfg::T;
  const Global<const T> src = arg<const T>(a, 0);
  const Global<T> dst = arg<T>(a, 1);
  constexpr i64 count = i64(Cfg::N) * Cfg::C * Cfg::EH * Cfg::EW;
  const i64 stride = i64(gridDim.x) * Cfg::THREADS;
  for (i64 e = i64(blockIdx.x) * Cfg::THREADS + threadIdx.x; e < count; e += stride) {
    // Window coordinates in dst's memory order (channels fastest in NHWC): stores coalesce.
    i64 n, c, i, j;
    if constexpr (Cfg::DST_NHWC) {
      c = e % Cfg::C, j = (e / Cfg::C) % Cfg::EW, i = (e / (i64(Cfg::C) * Cfg::EW)) % Cfg::EH;
      n = e / (i64(Cfg::C) * Cfg::EW * Cfg::EH);
    } else {
      j = e % Cfg::EW, i = (e / Cfg::EW) % Cfg::EH, c = (e / (i64(Cfg::EW) * Cfg::EH)) % Cfg::C;
      n = e / (i64(Cfg::EW) * Cfg::EH * Cfg::C);
    }
    const i64 sh = Cfg::SRC_H0 + i, sw = Cfg::SRC_W0 + j, dh = Cfg::DST_H0 + i,
              dw = Cfg::DST_W0 + j;
    const i64 from = Cfg::SRC_NHWC ? ((n * Cfg::SH + sh) * Cfg::SW + sw) * Cfg::C + c
                                   : ((n * Cfg::C + c) * Cfg::SH + sh) * Cfg::SW + sw;
    const i64 to = Cfg::DST_NHWC ? ((n * Cfg::DH + dh) * Cfg::DW + dw) * Cfg::C + c
                                 : ((n * Cfg::C + c) * Cfg::DH + dh) * Cfg::DW + dw;
    float v = to_float(src[from]);
    if constexpr (Cfg::ACCUMULATE) v += to_float(dst[to]);
    dst[to] = from_float<T>(v);
  }
}

} // namespace kiln::elementwise
