// The fused max-pool epilogue of conv/direct.cuh (conv2d.pool_forward): the block's conv
// tile is the footprint of a PTH x PTW tile of pooled outputs (its origin at the pooled
// tile's first window, which may start before the image: the pool's padding); it stages
// the fused epilogue's act(acc + bias) in shared memory, -inf where the footprint lies outside the
// conv's output, and each thread takes window maxima from there: y is never written to memory. Max
// commutes with rounding to T, so rounding the maxima equals pooling the rounded conv.
//
// A thread holds acc[P][PO]: conv-tile pixel pg + i * NPG (row-major in the TH x TW tile at
// oh0, ow0) and channel o0 + cq + j * NCO within group g, of image n.
// Cfg: T, O, OH, OW (the conv's output), G, NHWC, HAS_BIAS, HAS_RESIDUAL (false), RELU or ACT,
//      TH, TW, TO, THREADS;
//      PKH, PKW, PSH, PSW (the pool's window and stride), POH, POW (pooled extents), PTH, PTW
//      (pooled tile; TH = (PTH - 1) * PSH + PKH, TW alike). A NaN wins its window, as in
//      pool/pool2d.cuh.
// Arguments from kY: y (pooled, [N, O, POH, POW] in y's layout).
#pragma once

#include "common/epilogue.cuh"
#include "common/tensor4.cuh"

namespace kiln::conv {

// The maximum of the Cfg::PKH x Cfg::PKW pool window of pooled output q (row-major in a
// PTH x PTW tile) over a staged footprint tile ys[row * FW + col][channel c] of `pitch`
// floats per pixel; -inf pads it, and a NaN wins, as in pool/pool2d.cuh.
template <class Cfg, int FW>
KILN_FN float staged_window_max(const Shared<float>& ys, int pitch, int q, int c) {
  float m = __int_as_float(int(0xff800000u));
  const int r0 = (q / Cfg::PTW) * Cfg::PSH, c0 = (q % Cfg::PTW) * Cfg::PSW;
#pragma unroll
  for (int kh = 0; kh < Cfg::PKH; ++kh)
#pragma unroll
    for (int kw = 0; kw < Cfg::PKW; ++kw) {
      const float v = ys[((r0 + kh) * FW + c0 + kw) * pitch + c];
      m = v > m || v != v ? v : m; // once NaN, stays NaN
    }
  return m;
}

template <class Cfg, int NPG, int NCO, int P, int PO, int kB, int kY>
KILN_FN void pool_epilogue(const KernelArgs& a, const float (&acc)[P][PO], int n, int g, int oh0,
                           int ow0, int o0, int pg, int cq, int ph0, int pw0) {
  using T = typename Cfg::T;
  constexpr int TH = Cfg::TH, TW = Cfg::TW, TO = Cfg::TO, Og = Cfg::O / Cfg::G;
  constexpr int PTH = Cfg::PTH, PTW = Cfg::PTW, YPITCH = TO + 1;
  static_assert(TH == (PTH - 1) * Cfg::PSH + Cfg::PKH && TW == (PTW - 1) * Cfg::PSW + Cfg::PKW,
                "the conv tile is the pooled tile's footprint");
  static_assert(!Cfg::HAS_RESIDUAL, "a pooled conv adds no residual");
  using Y = Tensor4<Cfg::NHWC, Cfg::N, Cfg::O, Cfg::POH, Cfg::POW>;
  using I = typename Y::index;
  const float kNegInf = __int_as_float(int(0xff800000u)); // the pool's padding
  KILN_SHARED_ARRAY(float, ys, TH* TW* YPITCH);           // [tile pixel][channel]
#pragma unroll
  for (int i = 0; i < P; ++i) {
    const int p = pg + i * NPG;
    if (p >= TH * TW) continue;
    const int oh = oh0 + p / TW, ow = ow0 + p % TW;
    const bool in = oh >= 0 && oh < Cfg::OH && ow >= 0 && ow < Cfg::OW;
#pragma unroll
    for (int j = 0; j < PO; ++j) {
      const int og = o0 + cq + j * NCO;
      float v = kNegInf;
      if (in && og < Og) v = epilogue_of<Cfg>::apply(a, kB, 0, acc[i][j], g * Og + og, 0);
      ys[p * YPITCH + cq + j * NCO] = v;
    }
  }
  sync_threads();
  // Pooled outputs in the order y lies in memory: channels fastest in NHWC.
  for (int e = int(threadIdx.x); e < PTH * PTW * TO; e += Cfg::THREADS) {
    const int o = Cfg::NHWC ? e % TO : e / (PTH * PTW);
    const int q = Cfg::NHWC ? e / TO : e % (PTH * PTW);
    const int ph = ph0 + q / PTW, pw = pw0 + q % PTW, og = o0 + o;
    if (ph >= Cfg::POH || pw >= Cfg::POW || og >= Og) continue;
    const float m = staged_window_max<Cfg, TW>(ys, YPITCH, q, o);
    const int oc = g * Og + og;
    arg<T>(a, kY)[Y::at(I(n), oc, ph, pw)] = from_float<T>(m);
  }
}

} // namespace kiln::conv
