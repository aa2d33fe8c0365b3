// A convolution's filters turned for its data gradient (conv2d.flip_weight): w [O][C][KH][KW]
// -> w_out [C][O][KH][KW] with w_out[c][o][i][j] = w[o][c][KH-1-i][KW-1-j], so a stride-1
// conv's dx is the forward conv of dy with w_out (padding KH-1-PH, KW-1-PW) and runs on the
// forward families' tensor-core kernels.
//
// Cfg: T, O, C, KH, KW, OUT_NHWC (w_out stored [C][KH][KW][O], the nhwc layout of a weight;
//      false: OIHW like w), THREADS.
// Arguments, in order: w, w_out.
// Grid: any; one thread per w_out element in w_out's memory order (grid-stride loop).
#pragma once

#include "common/kiln.cuh"

namespace kiln::conv {

template <class Cfg> KILN_FN void flip_weight(const KernelArgs& a) {
  using T = typename Cfg::T;
  constexpr int O = Cfg::O, C = Cfg::C, KH = Cfg::KH, KW = Cfg::KW, KK = KH * KW;
  constexpr i64 count = i64(O) * C * KK;
  const Global<const T> w = arg<const T>(a, 0);
  const Global<T> w_out = arg<T>(a, 1);
  const i64 stride = i64(gridDim.x) * Cfg::THREADS;
  for (i64 e = i64(blockIdx.x) * Cfg::THREADS + threadIdx.x; e < count; e += stride) {
    // w_out's element e: filter c, input channel o, tap k = i * KW + j.
    const int o = Cfg::OUT_NHWC ? int(e % O) : int((e / KK) % O);
    const int k = Cfg::OUT_NHWC ? int((e / O) % KK) : int(e % KK);
    const int c = int(e / (i64(O) * KK));
    w_out[e] = w[(i64(o) * C + c) * KK + (KK - 1 - k)];
  }
}

} // namespace kiln::conv
