// Copies a 4-D tensor between layouts (nchw <-> nhwc) and element types, or a flat one
// between element types. One thread per output element, in output memory order.
//
// Cfg: TI, TO (element types), N, C, H, W (logical sizes; flat tensors use N = count,
//      C = H = W = 1), IN_NHWC, OUT_NHWC, THREADS, ROUND_TF32 (a float dst rounded to tf32:
//      weights that tf32 tensor-core kernels then read without rounding them again).
// Arguments: src, dst. Grid: any (grid-stride loop).
#pragma once

#include "common/tensor4.cuh"

namespace kiln::elementwise {

template <class Cfg> KILN_FN void convert(const KernelArgs& a) {
  const Global<const typename Cfg::TI> src = arg<const typename Cfg::TI>(a, 0);
  const Global<typename Cfg::TO> dst = arg<typename Cfg::TO>(a, 1);
  using In = Tensor4<Cfg::IN_NHWC, Cfg::N, Cfg::C, Cfg::H, Cfg::W, i64>;
  using Out = Tensor4<Cfg::OUT_NHWC, Cfg::N, Cfg::C, Cfg::H, Cfg::W, i64>;
  const i64 stride = i64(gridDim.x) * Cfg::THREADS;
  for (i64 o = i64(blockIdx.x) * Cfg::THREADS + threadIdx.x; o < Out::count; o += stride) {
    // Logical coordinates of output element o, then where the input holds them.
    const Coord4<i64> p = Out::coord(o);
    const float v = to_float(src[In::at(p.n, p.c, p.h, p.w)]);
    dst[o] = from_float<typename Cfg::TO>(Cfg::ROUND_TF32 ? __uint_as_float(float_to_tf32(v)) : v);
  }
}

} // namespace kiln::elementwise
