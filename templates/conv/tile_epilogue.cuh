// The epilogue of the conv forward templates that hold a block's outputs in registers
// (conv/direct.cuh, conv/sparse.cuh): each output through the fused epilogue
// (common/epilogue.cuh), one store per output in y's layout; with COMPACT, also the
// compacted form of y (runtime/sparse_form.hpp) for a sparse convolution that reads it, made
// from the block's output tile staged in shared memory (conv/compact_staged.cuh), so
// compacting costs no second pass over y.
//
// A thread holds acc[P][PO]: tile pixel pg + i * NPG (row-major in the TH x TW tile at oh0,
// ow0) and channel o0 + cq + j * NCO within group g, of image n.
// Cfg: T, O, OH, OW, G, NHWC, HAS_BIAS, HAS_RESIDUAL, RELU or ACT, TH, TW, TO, THREADS,
//      COMPACT, YCS (the form's slice size; TO % YCS == 0, and (O / G) % YCS == 0 with
//      groups, so that a block's slices are whole and its group's), YCOUNT (add y's
//      nonzeros to y_nnz).
// Arguments from kY: y, then with COMPACT y_values, y_index, y_count, [y_nnz] (YCOUNT).
#pragma once

#include "common/epilogue.cuh"
#include "common/tensor4.cuh"
#include "conv/compact_staged.cuh"

namespace kiln::conv {

template <class Cfg, int NPG, int NCO, int P, int PO, int kB, int kR, int kY>
KILN_FN void conv_epilogue(const KernelArgs& a, const float (&acc)[P][PO], int n, int g, int oh0,
                           int ow0, int o0, int pg, int cq) {
  using T = typename Cfg::T;
  constexpr int TH = Cfg::TH, TW = Cfg::TW, TO = Cfg::TO, Og = Cfg::O / Cfg::G;
  constexpr int YPITCH = TO + 1;
  using Y = Tensor4<Cfg::NHWC, Cfg::N, Cfg::O, Cfg::OH, Cfg::OW>;
  using I = typename Y::index;
  KILN_SHARED_ARRAY(float, ys, Cfg::COMPACT ? TH* TW* YPITCH : 1); // [tile pixel][channel]
#pragma unroll
  for (int i = 0; i < P; ++i) {
    const int p = pg + i * NPG;
    const int oh = oh0 + p / TW, ow = ow0 + p % TW;
    const bool in = p < TH * TW && oh < Cfg::OH && ow < Cfg::OW;
#pragma unroll
    for (int j = 0; j < PO; ++j) {
      const int og = o0 + cq + j * NCO;
      float v = 0.f;
      if (in && og < Og) {
        const int oc = g * Og + og;
        const I at = Y::at(I(n), oc, oh, ow);
        v = epilogue_of<Cfg>::apply(a, kB, kR, acc[i][j], oc, at);
        const T r = from_float<T>(v);
        arg<T>(a, kY)[at] = r;
        v = to_float(r); // compact what was stored
      }
      if (Cfg::COMPACT && p < TH * TW) ys[p * YPITCH + cq + j * NCO] = v;
    }
  }
  if constexpr (Cfg::COMPACT) {
    constexpr int YCS = Cfg::YCS, YSL = ceil_div(Cfg::O, YCS);
    static_assert(TO % YCS == 0 && (Cfg::G == 1 || Og % YCS == 0), "a block's slices are whole");
    sync_threads();
    const int s0 = (g * Og + o0) / YCS;
    const int counted = compact_staged<YCS, TH * TW, TO / YCS, YPITCH, Cfg::THREADS>(
        ys,
        [&](int r, int sl) -> i64 {
          const int oh = oh0 + r / TW, ow = ow0 + r % TW;
          if (oh >= Cfg::OH || ow >= Cfg::OW || o0 + sl * YCS >= Og) return -1;
          return Tensor4<true, Cfg::N, YSL, Cfg::OH, Cfg::OW, i64>::at(n, s0 + sl, oh, ow);
        },
        arg<T>(a, kY + 1), arg<u8>(a, kY + 2), arg<u8>(a, kY + 3));
    if constexpr (Cfg::YCOUNT) {
      KILN_SHARED_ARRAY(int, warp_nnz, Cfg::THREADS / 32);
      add_block_count<Cfg::THREADS>(counted, warp_nnz, arg<int>(a, kY + 4));
    }
  }
}

} // namespace kiln::conv
