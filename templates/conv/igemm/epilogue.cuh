// The implicit GEMM's epilogue: the accumulators of a block to memory, three ways.
//  - SPLIT > 1: raw sums into partial[split][m][o] (float; partial.sum applies the epilogue,
//    or, with SPLIT_REDUCE, the tile's last block: split_reduce.cuh).
//  - POOL: the fused epilogue's act(acc + b) of the block's footprint staged over the
//    drained pipeline's shared memory (-inf outside the conv's output: the pool's padding),
//    window maxima taken there, the pooled y stored (NHWC).
//  - otherwise: y[m][o] = the fused epilogue (common/epilogue.cuh) of acc, bias and residual.
// Each lane holds outputs o and o + 1 (o even) of its rows: with O even they are one aligned
// pair, loaded and stored as one 4-byte (16-bit T) or 8-byte (float) word.
#pragma once

#include "common/epilogue.cuh"
#include "common/tensor4.cuh"
#include "common/words.cuh"
#include "conv/igemm/geometry.cuh"
#include "conv/pool_epilogue.cuh"

namespace kiln::conv::igemm {

template <class Cfg> using Accumulators = float[Geometry<Cfg>::MT][Geometry<Cfg>::NT][4];

// Calls f(i, j, h, m, o) for each pair of outputs a lane holds inside the GEMM: row m,
// columns o and o + 1 (o even; o + 1 may lie past O), accumulators acc[i][j][2h] and
// acc[i][j][2h + 1]. Unrolled, so f indexes the accumulators with constants.
template <class Cfg, class F>
KILN_FN void for_each_output_pair(const BlockTile<Cfg>& bt, const WarpTile<Cfg>& wt, F&& f) {
  using G = Geometry<Cfg>;
  using I = typename G::I;
  KILN_IGEMM_UNROLL
  for (int j = 0; j < G::NT; ++j) {
    const int o = bt.n_block + wt.warp_n * G::WTN + j * 8 + 2 * wt.t;
    KILN_IGEMM_UNROLL
    for (int i = 0; i < G::MT; ++i) {
      KILN_IGEMM_UNROLL
      for (int h = 0; h < 2; ++h) {
        const I m = bt.m_block + wt.warp_m * G::WTM + i * 16 + h * 8 + wt.g;
        if (m < G::M && o < G::O) f(i, j, h, m, o);
      }
    }
  }
}

template <class Cfg>
KILN_FN void store_partial(const KernelArgs& args, const BlockTile<Cfg>& bt,
                           const WarpTile<Cfg>& wt, const Accumulators<Cfg>& acc,
                           int arg_partial = 2) {
  using G = Geometry<Cfg>;
  using I = typename G::I;
  constexpr int O = G::O;
  const I base = I(bt.split) * G::M * O;
  for_each_output_pair<Cfg>(bt, wt, [&](int i, int j, int h, I m, int o) {
    const I at = base + m * O + o;
    if constexpr (O % 2 == 0) {
      arg<u64>(args, arg_partial)[at / 2] = pair(acc[i][j][2 * h], acc[i][j][2 * h + 1]);
    } else {
      const Global<float> part = arg<float>(args, arg_partial);
      part[at] = acc[i][j][2 * h];
      if (o + 1 < O) part[at + 1] = acc[i][j][2 * h + 1];
    }
  });
}

template <class Cfg>
KILN_FN void store_pooled(const KernelArgs& args, const BlockTile<Cfg>& bt, const WarpTile<Cfg>& wt,
                          const Accumulators<Cfg>& acc) {
  using G = Geometry<Cfg>;
  using T = typename G::T;
  using I = typename G::I;
  using PT = typename G::PT;
  using E = epilogue_of<Cfg>;
  constexpr int O = G::O, BN = G::BN;
  constexpr int YP = BN + 1; // floats per staged row: conflict-free column reads
  const Shared<float> ys = dynamic_shared<float>();
  const float neg_inf = __int_as_float(int(0xff800000u));
  const I pt = bt.m_block / G::BM, n = pt / PT::TILES;
  const int tp = int(pt - n * PT::TILES);
  const int ph0 = (tp / PT::TILES_W) * Cfg::PTH, pw0 = (tp % PT::TILES_W) * Cfg::PTW;
  sync_threads();
  KILN_IGEMM_UNROLL
  for (int j = 0; j < G::NT; ++j) {
    const int c = wt.warp_n * G::WTN + j * 8 + 2 * wt.t, o = bt.n_block + c;
    float bias[2] = {0.0f, 0.0f};
    if constexpr (Cfg::HAS_BIAS) {
      const Global<const T> b = arg<const T>(args, G::kArgB);
      if (o < O) bias[0] = to_float(b[o]);
      if (o + 1 < O) bias[1] = to_float(b[o + 1]);
    }
    KILN_IGEMM_UNROLL
    for (int i = 0; i < G::MT; ++i) {
      KILN_IGEMM_UNROLL
      for (int h = 0; h < 2; ++h) {
        const int r = wt.warp_m * G::WTM + i * 16 + h * 8 + wt.g;
        const int oh = ph0 * Cfg::PSH - Cfg::PPH + r / PT::FW;
        const int ow = pw0 * Cfg::PSW - Cfg::PPW + r % PT::FW;
        const bool valid = r < PT::FH * PT::FW && oh >= 0 && oh < G::OH && ow >= 0 && ow < G::OW;
        KILN_IGEMM_UNROLL
        for (int e = 0; e < 2; ++e)
          ys[r * YP + c + e] = valid ? E::apply(acc[i][j][2 * h + e], bias[e], 0.0f) : neg_inf;
      }
    }
  }
  sync_threads();
  const Global<T> y = arg<T>(args, G::kArgY);
  for (int e = thread_linear(); e < Cfg::PTH * Cfg::PTW * BN; e += G::THREADS) {
    const int c = e % BN, q = e / BN; // channels fastest: y is NHWC
    const int ph = ph0 + q / Cfg::PTW, pw = pw0 + q % Cfg::PTW, o = bt.n_block + c;
    if (ph >= Cfg::POH || pw >= Cfg::POW || o >= O) continue;
    const float v = staged_window_max<Cfg, PT::FW>(ys, YP, q, c);
    // NHWC, its pixels YP elements apart (Y_PITCH: a channel window of a concat's output).
    constexpr I YP = I(y_pitch_of<Cfg, O>::value);
    y[((n * Cfg::POH + ph) * Cfg::POW + pw) * YP + o] = from_float<T>(v);
  }
}

template <class Cfg>
KILN_FN void store_output(const KernelArgs& args, const BlockTile<Cfg>& bt, const WarpTile<Cfg>& wt,
                          const Accumulators<Cfg>& acc) {
  using G = Geometry<Cfg>;
  using T = typename G::T;
  using I = typename G::I;
  using E = epilogue_of<Cfg>;
  constexpr int O = G::O;
  constexpr bool PAIRS = O % 2 == 0;
  // y's pixels YP elements apart: O, or a concat's channel count where y is a window of it.
  constexpr int YP = y_pitch_of<Cfg, O>::value;
  constexpr bool Y_PAIRS = PAIRS && YP % 2 == 0;
  using Pair = typename pick<G::ES == 2, u32, u64>::type;
  Pair bw[G::NT]; // the bias pairs, all loaded before the first store (below)
  KILN_IGEMM_UNROLL
  for (int j = 0; j < G::NT; ++j) {
    const int o = bt.n_block + wt.warp_n * G::WTN + j * 8 + 2 * wt.t;
    bw[j] = 0; // zero bits: 0.0 in every T
    if (!Cfg::HAS_BIAS || o >= O) continue;
    if constexpr (PAIRS) {
      bw[j] = arg<const Pair>(args, G::kArgB)[o / 2];
    } else {
      const Global<const T> b = arg<const T>(args, G::kArgB);
      bw[j] = pair(b[o], o + 1 < O ? b[o + 1] : T{});
    }
  }
  KILN_IGEMM_UNROLL
  for (int j = 0; j < G::NT; ++j) {
    const int o = bt.n_block + wt.warp_n * G::WTN + j * 8 + 2 * wt.t;
    const float b0 = to_float(lo<T>(bw[j])), b1 = to_float(hi<T>(bw[j]));
    // Every residual pair of column pair j before any store: the compiler may not move a load
    // past a store to y (it could alias), and a load's latency exposed per store is slow.
    Pair rw[G::MT][2];
    KILN_IGEMM_UNROLL
    for (int i = 0; i < G::MT; ++i) {
      KILN_IGEMM_UNROLL
      for (int h = 0; h < 2; ++h) {
        const I m = bt.m_block + wt.warp_m * G::WTM + i * 16 + h * 8 + wt.g;
        rw[i][h] = 0; // zero bits: 0.0 in every T
        if (!Cfg::HAS_RESIDUAL || m >= G::M || o >= O) continue;
        const I at = m * O + o;
        if constexpr (PAIRS) {
          rw[i][h] = arg<const Pair>(args, G::kArgRes)[at / 2];
        } else {
          const Global<const T> res = arg<const T>(args, G::kArgRes);
          rw[i][h] = pair(res[at], o + 1 < O ? res[at + 1] : T{});
        }
      }
    }
    KILN_IGEMM_UNROLL
    for (int i = 0; i < G::MT; ++i) {
      KILN_IGEMM_UNROLL
      for (int h = 0; h < 2; ++h) {
        const I m = bt.m_block + wt.warp_m * G::WTM + i * 16 + h * 8 + wt.g;
        if (m >= G::M || o >= O) continue;
        const float v0 = E::apply(acc[i][j][2 * h], b0, to_float(lo<T>(rw[i][h])));
        const float v1 = E::apply(acc[i][j][2 * h + 1], b1, to_float(hi<T>(rw[i][h])));
        const I yat = m * YP + o;
        if constexpr (Y_PAIRS) {
          arg<Pair>(args, G::kArgY)[yat / 2] = pair(from_float<T>(v0), from_float<T>(v1));
        } else {
          const Global<T> y = arg<T>(args, G::kArgY);
          y[yat] = from_float<T>(v0);
          if (o + 1 < O) y[yat + 1] = from_float<T>(v1);
        }
      }
    }
  }
}

template <class Cfg>
KILN_FN void epilogue(const KernelArgs& args, const BlockTile<Cfg>& bt, const WarpTile<Cfg>& wt,
                      const Accumulators<Cfg>& acc) {
  if constexpr (Cfg::SPLIT > 1)
    store_partial<Cfg>(args, bt, wt, acc);
  else if constexpr (Cfg::POOL)
    store_pooled<Cfg>(args, bt, wt, acc);
  else
    store_output<Cfg>(args, bt, wt, acc);
}

} // namespace kiln::conv::igemm
