// Copies a 4-D tensor between layouts (nchw <-> nhwc) and element types, or a flat one
// between element types. One thread per output element, in output memory order.
//
// Cfg: TI, TO (element types), N, C, H, W (logical sizes; flat tensors use N = count,
//      C = H = W = 1), IN_NHWC, OUT_NHWC, THREADS.
// Arguments: src, dst. Grid: any (grid-stride loop).
#pragma once

#include "common/kiln.cuh"

namespace kiln::elementwise {

template <class Cfg> KILN_FN void convert(const KernelArgs& a) {
  const Global<const typename Cfg::TI> src = arg<const typename Cfg::TI>(a, 0);
  const Global<typename Cfg::TO> dst = arg<typename Cfg::TO>(a, 1);
  constexpr i64 count = i64(Cfg::N) * Cfg::C * Cfg::H * Cfg::W;
  const i64 stride = i64(gridDim.x) * Cfg::THREADS;
  for (i64 o = i64(blockIdx.x) * Cfg::THREADS + threadIdx.x; o < count; o += stride) {
    // Logical coordinates of output element o, then where the input holds them.
    i64 n, c, h, w;
    if constexpr (Cfg::OUT_NHWC) {
      c = o % Cfg::C, w = (o / Cfg::C) % Cfg::W, h = (o / (i64(Cfg::C) * Cfg::W)) % Cfg::H;
      n = o / (i64(Cfg::C) * Cfg::W * Cfg::H);
    } else {
      w = o % Cfg::W, h = (o / Cfg::W) % Cfg::H, c = (o / (i64(Cfg::W) * Cfg::H)) % Cfg::C;
      n = o / (i64(Cfg::W) * Cfg::H * Cfg::C);
    }
    const i64 in = Cfg::IN_NHWC ? ((n * Cfg::H + h) * Cfg::W + w) * Cfg::C + c
                                : ((n * Cfg::C + c) * Cfg::H + h) * Cfg::W + w;
    dst[o] = from_float<typename Cfg::TO>(to_float(src[in]));
  }
}

} // namespace kiln::elementwise
