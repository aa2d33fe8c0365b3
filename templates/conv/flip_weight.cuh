// A convolution's filters turned for its data gradient (conv2d.flip_weight): w [O][C][KH][KW]
// -> w_out [C][O][TH][TW] with w_out[c][o][i][j] = w[o][c][FH + (TH-1-i) SH][FW + (TW-1-j)
// SW], so a stride-1 conv's dx (every tap: F 0, S 1, T = K) is the forward conv of dy with
// w_out (padding KH-1-PH, KW-1-PW) and runs on the forward families' tensor-core kernels; a
// stride-S conv's dx is S_H x S_W such convs, each over one phase's taps.
//
// Cfg: T, O, C, KH, KW, TH, TW (taps kept), FH, FW (first tap), SH, SW (between taps),
//      OUT_NHWC (w_out stored [C][TH][TW][O], the nhwc layout of a weight; false: OIHW like
//      w), THREADS.
// Arguments, in order: w, w_out.
// Grid: any; one thread per w_out element in w_out's memory order (grid-stride loop).
#pragma once

#include "common/kiln.cuh"

namespace kiln::conv {

template <class Cfg> KILN_FN void flip_weight(const KernelArgs& a) {
  using T = typename Cfg::T;
  constexpr int O = Cfg::O, C = Cfg::C, KH = Cfg::KH, KW = Cfg::KW;
  constexpr int TH = Cfg::TH, TW = Cfg::TW, TT = TH * TW;
  constexpr i64 count = i64(O) * C * TT;
  const Global<const T> w = arg<const T>(a, 0);
  const Global<T> w_out = arg<T>(a, 1);
  const i64 stride = i64(gridDim.x) * Cfg::THREADS;
  for (i64 e = i64(blockIdx.x) * Cfg::THREADS + threadIdx.x; e < count; e += stride) {
    // w_out's element e: filter c, input channel o, tap k = i * TW + j.
    const int o = Cfg::OUT_NHWC ? int(e % O) : int((e / TT) % O);
    const int k = Cfg::OUT_NHWC ? int((e / O) % TT) : int(e % TT);
    const int c = int(e / (i64(O) * TT));
    const int kh = Cfg::FH + (TH - 1 - k / TW) * Cfg::SH,
              kw = Cfg::FW + (TW - 1 - k % TW) * Cfg::SW;
    w_out[e] = w[((i64(o) * C + c) * KH + kh) * KW + kw];
  }
}

} // namespace kiln::conv
