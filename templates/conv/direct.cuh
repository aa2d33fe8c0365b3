// Direct convolution (conv2d.forward) with its fused epilogue (common/epilogue.cuh):
// y = act(conv(x, w) + b + residual), accumulated in fp32 whatever the storage type.
//
// A block computes a TH x TW tile of output pixels for TO output channels of one group of one
// image. It walks the group's input channels CK at a time: the input patch the tile reads
// (tile + halo, zero outside the image) and the tile's weights for those channels are staged
// in shared memory as floats, then every thread accumulates P pixels x PO channels from them.
// A thread's pixels are strided by the pixel-group count (tile-local, row-major) and its
// channels by the channel-group count, so a warp reads consecutive patch elements and
// broadcasts weights.
//
// Cfg: T (element type of every float argument: float, f16, bf16),
//      N, C, H, W (input), O, OH, OW (output), KH, KW, SH, SW, PH, PW, DH, DW, G (groups),
//      NHWC (layout of y and residual; false: NCHW), X_NHWC (layout of x: a network's first
//      conv may read its NCHW input, or a folded batch's view of it, into an NHWC network
//      without a conversion), W_OHWI (w stored [O][KH][KW][C/G],
//      the nhwc layout of a weight; false: OIHW), HAS_BIAS, HAS_RESIDUAL, RELU or ACT,
//      GUARD, THRESHOLD (the dense side of a sparse dispatch: return, writing nothing, unless
//      the running nonzero count nnz of x exceeds THRESHOLD; conv/sparse.cuh computes y then),
//      COMPACT, YCS, YCOUNT (compact y as it is written: conv/tile_epilogue.cuh),
//      TH, TW, TO (block tile: output rows, columns, channels within a group),
//      CK (input channels staged per step), P, PO (pixels and channels per thread),
//      THREADS = NP * (TO / PO) with NP >= ceil(TH * TW / P) pixel groups (TO a multiple of
//      PO; the generator rounds NP up so that THREADS is a whole number of warps).
//      POOL (conv2d.pool_forward: a max pool fused after the epilogue, conv/pool_epilogue.cuh;
//      then PKH, PKW, PSH, PSW, PPH, PPW, POH, POW, PTH, PTW describe the pool and the pooled
//      tile whose footprint TH x TW is; no residual, guard or compaction).
// Arguments, in order: x, w, [b], [residual], [nnz] (GUARD), y, [y_values, y_index, y_count,
//      [y_nnz]] (COMPACT) (absent ones are not passed).
// Grid: x = ceil(OH / TH) * ceil(OW / TW) spatial tiles (POOL: ceil(POH / PTH) *
//       ceil(POW / PTW) pooled tiles), y = G * ceil((O / G) / TO), z = N.
//       Block: THREADS x 1 x 1.
#pragma once

#include "conv/pool_epilogue.cuh"
#include "conv/tile_epilogue.cuh"

namespace kiln::conv {

template <class Cfg> KILN_FN void direct(const KernelArgs& a) {
  using T = typename Cfg::T;
  constexpr int Cg = Cfg::C / Cfg::G, Og = Cfg::O / Cfg::G;
  constexpr int KH = Cfg::KH, KW = Cfg::KW, KK = KH * KW;
  constexpr int TH = Cfg::TH, TW = Cfg::TW, TO = Cfg::TO, CK = Cfg::CK;
  constexpr int P = Cfg::P, PO = Cfg::PO;
  constexpr int IHT = (TH - 1) * Cfg::SH + (KH - 1) * Cfg::DH + 1; // patch rows
  constexpr int IWT = (TW - 1) * Cfg::SW + (KW - 1) * Cfg::DW + 1; // patch columns
  constexpr int PATCH = IHT * IWT;
  constexpr int NCO = TO / PO;           // channel groups
  constexpr int NP = Cfg::THREADS / NCO; // pixel groups
  constexpr int OT = ceil_div(Og, TO);   // channel tiles per group
  constexpr int TILES_W = ceil_div(Cfg::OW, TW);
  constexpr int THREADS = Cfg::THREADS;
  static_assert(TO % PO == 0 && NP * NCO == THREADS && NP * P >= TH * TW,
                "THREADS = NP * TO/PO with NP * P covering the tile");
  constexpr i64 XE = i64(Cfg::N) * Cfg::C * Cfg::H * Cfg::W,
                YE = i64(Cfg::N) * Cfg::O * Cfg::OH * Cfg::OW;
  using I = index_t<(XE > YE ? XE : YE) + i64(Cfg::O) * Cg * KK>; // offsets into x, y, w
  using X = Tensor4<Cfg::X_NHWC, Cfg::N, Cfg::C, Cfg::H, Cfg::W, I>;

  const Global<const T> x = arg<const T>(a, 0);
  const Global<const T> w = arg<const T>(a, 1);
  constexpr int kB = 2, kR = 2 + (Cfg::HAS_BIAS ? 1 : 0), kN = kR + (Cfg::HAS_RESIDUAL ? 1 : 0);
  constexpr int kY = kN + (Cfg::GUARD ? 1 : 0);
  if constexpr (Cfg::GUARD) {
    if (i64(arg<const int>(a, kN)[0]) <= i64(Cfg::THRESHOLD)) return; // the sparse path runs
  }

  constexpr int PATCH_ELEMS = CK * PATCH, W_ELEMS = CK * KK * TO;
  KILN_SHARED_ARRAY(float, xs, PATCH_ELEMS); // [c][patch row][patch column]
  KILN_SHARED_ARRAY(float, ws, W_ELEMS);     // [c][kh * KW + kw][o]

  static_assert(!Cfg::POOL || (!Cfg::HAS_RESIDUAL && !Cfg::GUARD && !Cfg::COMPACT),
                "a pooled conv has a bias and relu epilogue only");
  const int tile = int(blockIdx.x);
  // The conv tile's origin; pooled: the first window of the pooled tile (ph0, pw0).
  int oh0 = (tile / TILES_W) * TH, ow0 = (tile % TILES_W) * TW, ph0 = 0, pw0 = 0;
  if constexpr (Cfg::POOL) {
    constexpr int PTILES_W = ceil_div(Cfg::POW, Cfg::PTW);
    ph0 = (tile / PTILES_W) * Cfg::PTH;
    pw0 = (tile % PTILES_W) * Cfg::PTW;
    oh0 = ph0 * Cfg::PSH - Cfg::PPH;
    ow0 = pw0 * Cfg::PSW - Cfg::PPW;
  }
  const int g = int(blockIdx.y) / OT, o0 = (int(blockIdx.y) % OT) * TO; // o0: within the group
  const int n = int(blockIdx.z);
  const int t = int(threadIdx.x);
  const int pg = t % NP, cq = t / NP;
  const int ih0 = oh0 * Cfg::SH - Cfg::PH, iw0 = ow0 * Cfg::SW - Cfg::PW;

  // Where each of this thread's pixels starts its window in the patch (pixels past the
  // tile's end compute on pixel 0 and are never stored).
  int base[P];
#pragma unroll
  for (int i = 0; i < P; ++i) {
    const int p = pg + i * NP < TH * TW ? pg + i * NP : 0;
    base[i] = (p / TW) * Cfg::SH * IWT + (p % TW) * Cfg::SW;
  }
  float acc[P][PO];
#pragma unroll
  for (int i = 0; i < P; ++i)
#pragma unroll
    for (int j = 0; j < PO; ++j)
      acc[i][j] = 0.f;

  for (int c0 = 0; c0 < Cg; c0 += CK) {
    // The input patch of channels c0 .. c0 + CK - 1, in the order x lies in memory.
#pragma unroll 2
    for (int e = t; e < CK * PATCH; e += THREADS) {
      int c, r, q;
      if (Cfg::X_NHWC) {
        c = e % CK, r = (e / CK) / IWT, q = (e / CK) % IWT;
      } else {
        c = e / PATCH, r = (e % PATCH) / IWT, q = e % IWT;
      }
      const int ih = ih0 + r, iw = iw0 + q, ci = g * Cg + c0 + c;
      float v = 0.f;
      if (c0 + c < Cg && ih >= 0 && ih < Cfg::H && iw >= 0 && iw < Cfg::W) {
        v = to_float(x[X::at(I(n), ci, ih, iw)]);
      }
      xs[c * PATCH + r * IWT + q] = v;
    }
    // The tile's weights for those channels (zero past the group's channels).
#pragma unroll 2
    for (int e = t; e < CK * KK * TO; e += THREADS) {
      int o, c, k;
      if (Cfg::W_OHWI) {
        c = e % CK, k = (e / CK) % KK, o = e / (CK * KK);
      } else {
        k = e % KK, c = (e / KK) % CK, o = e / (KK * CK);
      }
      float v = 0.f;
      if (o0 + o < Og && c0 + c < Cg) {
        const I oc = I(g) * Og + o0 + o;
        const I at = Cfg::W_OHWI ? (oc * KK + k) * Cg + c0 + c : (oc * Cg + c0 + c) * KK + k;
        v = to_float(w[at]);
      }
      ws[(c * KK + k) * TO + o] = v;
    }
    sync_threads();
#pragma unroll 1
    for (int c = 0; c < CK; ++c)
#pragma unroll 1
      for (int kh = 0; kh < KH; ++kh)
#pragma unroll
        for (int kw = 0; kw < KW; ++kw) {
          float wv[PO];
#pragma unroll
          for (int j = 0; j < PO; ++j)
            wv[j] = ws[(c * KK + kh * KW + kw) * TO + cq + j * NCO];
          const int off = c * PATCH + kh * Cfg::DH * IWT + kw * Cfg::DW;
#pragma unroll
          for (int i = 0; i < P; ++i) {
            const float xv = xs[off + base[i]];
#pragma unroll
            for (int j = 0; j < PO; ++j)
              acc[i][j] += xv * wv[j];
          }
        }
    sync_threads();
  }

  if constexpr (Cfg::POOL)
    pool_epilogue<Cfg, NP, NCO, P, PO, kB, kY>(a, acc, n, g, oh0, ow0, o0, pg, cq, ph0, pw0);
  else
    conv_epilogue<Cfg, NP, NCO, P, PO, kB, kR, kY>(a, acc, n, g, oh0, ow0, o0, pg, cq);
}

} // namespace kiln::conv
