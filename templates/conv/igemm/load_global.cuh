// The implicit GEMM's loads from global to shared memory: one k tile of A (the im2col view
// of x) and of B (the weights) into a pipeline stage. Each thread owns fixed rows of the A
// and B tiles and one 16-byte chunk of them (VEC consecutive k), the same in every k tile:
// one cp.async per chunk with VEC_A / VEC_B, else VEC element loads (zero outside the image
// and past this block's range of k) packed into 4 words; stored at the chunk's place in the
// row (Geometry::chunk_at: swizzled or not).
//
// GATE (a squeeze-excite gate fused into this conv): x[n][..][c] is read as x * gate[n][c],
// rounded to T as the separate mul kernel rounds it, so the result is the unfused plan's bit
// for bit. Element loads scale in registers; a 16-byte cp.async chunk lands unscaled, and the
// thread that copied it scales it in place once its own copies are complete (scale_landed,
// before the barrier that shows the tile to the other warps).
//
// X_PITCH (NHWC x only): x is a channel window of a wider tensor (a channel slice:
// generator/rewrite/channel_views.cpp), its pixels X_PITCH elements apart instead of C.
#pragma once

#include "common/words.cuh"
#include "conv/igemm/geometry.cuh"

namespace kiln::conv::igemm {

template <class Cfg> struct GlobalLoader {
  using G = Geometry<Cfg>;
  using T = typename G::T;
  using I = typename G::I;
  static constexpr int A_ROWS = G::BM * G::CPR / G::THREADS, B_ROWS = G::BN * G::CPR / G::THREADS;
  static constexpr int ROW_STEP = G::THREADS / G::CPR;
  static constexpr int kOutside = -(1 << 29); // an ih that no filter tap brings into the image
  static constexpr int XP = int(x_pitch_of<Cfg, G::C>::value); // NHWC x: elements per pixel
  static_assert(XP == G::C || !Cfg::X_NCHW, "X_PITCH: an NHWC x");

  Global<const T> x, w;
  Global<const u32> x32, w32;
  Shared<u32> a_smem, b_smem;     // the A and B tiles of stage 0
  int col, row0;                  // the thread's chunk and first row
  int kb, ke;                     // the block's range of k
  I a_pix[A_ROWS];                // element offset of x[n][ih0][iw0][0] (may lie outside the image)
  int a_ih[A_ROWS], a_iw[A_ROWS]; // ih0 = oh * SH - PH (kOutside past M), iw0 = ow * SW - PW
  I b_row[B_ROWS];                // element offset of row o of the weights, or -1 past O
  Global<const T> gate;           // GATE: gate[n][c], [N][C]
  Global<const u32> gate32;
  I a_gate[G::GATE ? A_ROWS : 1]; // GATE: n * C, the row's image's gates

  KILN_FN GlobalLoader(const KernelArgs& args, Shared<u32> smem, const BlockTile<Cfg>& bt)
      : x(arg<const T>(args, 0)), w(arg<const T>(args, 1)), x32(arg<const u32>(args, 0)),
        w32(arg<const u32>(args, 1)), a_smem(smem), b_smem(smem + G::A_STAGE),
        gate(arg<const T>(args, G::GATE ? G::kArgGate : 0)),
        gate32(arg<const u32>(args, G::GATE ? G::kArgGate : 0)) {
    const int tid = thread_linear();
    col = tid % G::CPR, row0 = tid / G::CPR;
    kb = bt.kb, ke = bt.ke;
    using PT = typename G::PT;
    KILN_IGEMM_UNROLL
    for (int i = 0; i < A_ROWS; ++i) {
      const I m = bt.m_block + row0 + i * ROW_STEP;
      I n;
      int oh, ow;
      bool valid;
      if constexpr (G::POOL) { // row r of the footprint of pooled tile tp of image n
        const I pt = m / G::BM;
        const int r = int(m - pt * G::BM);
        n = pt / PT::TILES;
        const int tp = int(pt - n * PT::TILES);
        oh = (tp / PT::TILES_W) * Cfg::PTH * Cfg::PSH - Cfg::PPH + r / PT::FW;
        ow = (tp % PT::TILES_W) * Cfg::PTW * Cfg::PSW - Cfg::PPW + r % PT::FW;
        valid = r < PT::FH * PT::FW && oh >= 0 && oh < G::OH && ow >= 0 && ow < G::OW;
      } else {
        n = m / (G::OH * G::OW);
        const int r = int(m - n * (G::OH * G::OW));
        oh = r / G::OW, ow = r - (r / G::OW) * G::OW;
        valid = m < G::M;
      }
      a_ih[i] = valid ? oh * Cfg::SH - Cfg::PH : kOutside;
      if constexpr (G::GATE) a_gate[i] = valid ? n * G::C : I(0);
      a_iw[i] = ow * Cfg::SW - Cfg::PW;
      a_pix[i] = n * (I(G::H) * G::W * (Cfg::X_NCHW ? G::C : XP)) +
                 (I(oh * Cfg::SH - Cfg::PH) * G::W + a_iw[i]) * (Cfg::X_NCHW ? 1 : XP);
    }
    KILN_IGEMM_UNROLL
    for (int i = 0; i < B_ROWS; ++i) {
      const int o = bt.n_block + row0 + i * ROW_STEP;
      b_row[i] = o < G::O ? I(o) * G::K : I(-1);
    }
  }

  // k in this block's range (chunks never straddle its bounds: VEC divides 16 and K).
  KILN_FN bool in_range(int k) const { return G::SPLIT == 1 ? k < G::K : k >= kb && k < ke; }

  // Loads k tile kt into the pipeline stage at word offset `stage` (a multiple of
  // Geometry::STAGE; cp.async: one group's worth, the caller commits it).
  KILN_FN void load(int stage, int kt) const {
    constexpr int ROW = G::ROW, VEC = G::VEC, EPW = G::EPW, C = G::C, H = G::H, W = G::W;
    // The thread's rows lie a multiple of 8 apart: one swizzled chunk for all of them.
    const int at = row0 * ROW + G::chunk_at(row0, col) * 4;
    const Shared<u32> as = a_smem + stage + at;
    const Shared<u32> bs = b_smem + stage + at;
    const int k0 = kt * G::BK + col * VEC; // the chunk's first k
    // k = (kh, kw, c): the tap's offset from the pixel, then one element at a time.
    int c = k0 % C, kw = (k0 / C) % G::KW, kh = k0 / C / G::KW;
    if constexpr (Cfg::VEC_A) {
      const int dh = kh * Cfg::DH, dw = kw * Cfg::DW, tap = (dh * W + dw) * XP + c;
      KILN_IGEMM_UNROLL
      for (int i = 0; i < A_ROWS; ++i) {
        const int ih = a_ih[i] + dh, iw = a_iw[i] + dw;
        const bool ok = in_range(k0) && unsigned(ih) < unsigned(H) && unsigned(iw) < unsigned(W);
        cp_async_16(as + i * ROW_STEP * ROW, x32 + (ok ? (a_pix[i] + tap) / EPW : I(0)), ok);
      }
    } else {
      KILN_IGEMM_UNROLL
      for (int i = 0; i < A_ROWS; ++i) {
        u32 words[4] = {0u, 0u, 0u, 0u};
        int ce = c, kwe = kw, khe = kh;
        KILN_IGEMM_UNROLL
        for (int e = 0; e < VEC; ++e) {
          const int ih = a_ih[i] + khe * Cfg::DH, iw = a_iw[i] + kwe * Cfg::DW;
          const bool ok =
              in_range(k0 + e) && unsigned(ih) < unsigned(H) && unsigned(iw) < unsigned(W);
          const I tap = Cfg::X_NCHW ? I(ce) * (H * W) + (khe * Cfg::DH) * W + kwe * Cfg::DW
                                    : I((khe * Cfg::DH) * W + kwe * Cfg::DW) * XP + ce;
          if (ok) {
            T v = x[a_pix[i] + tap];
            if constexpr (G::GATE) v = from_float<T>(to_float(v) * to_float(gate[a_gate[i] + ce]));
            words[e / EPW] |= bits_of(v) << (16 * (e % EPW));
          }
          if (++ce == C) {
            ce = 0;
            if (++kwe == G::KW) kwe = 0, ++khe;
          }
        }
        KILN_IGEMM_UNROLL
        for (int j = 0; j < 4; ++j)
          as[i * ROW_STEP * ROW + j] = words[j];
      }
    }
    KILN_IGEMM_UNROLL
    for (int i = 0; i < B_ROWS; ++i) {
      const bool row_ok = b_row[i] >= 0;
      if constexpr (Cfg::VEC_B) {
        const bool ok = row_ok && in_range(k0);
        cp_async_16(bs + i * ROW_STEP * ROW, w32 + (ok ? (b_row[i] + k0) / EPW : I(0)), ok);
      } else {
        u32 words[4] = {0u, 0u, 0u, 0u};
        KILN_IGEMM_UNROLL
        for (int e = 0; e < VEC; ++e)
          if (row_ok && in_range(k0 + e))
            words[e / EPW] |= bits_of(w[b_row[i] + k0 + e]) << (16 * (e % EPW));
        KILN_IGEMM_UNROLL
        for (int j = 0; j < 4; ++j)
          bs[i * ROW_STEP * ROW + j] = words[j];
      }
    }
  }

  // GATE with 16-byte copies: scales this thread's A chunks of k tile kt, landed in the stage
  // at word offset `stage`, by their gates; called after the thread's wait for that tile's
  // copies and before the barrier. Chunks the copy zero-filled (outside the image, past M or
  // the block's k) stay zero, as the conv's padding of the gated x is.
  KILN_FN void scale_landed(int stage, int kt) const {
    if constexpr (G::GATE && Cfg::VEC_A) {
      constexpr int ROW = G::ROW, VEC = G::VEC, EPW = G::EPW, C = G::C;
      const Shared<u32> as = a_smem + stage + row0 * ROW + G::chunk_at(row0, col) * 4;
      const int k0 = kt * G::BK + col * VEC;
      if (!in_range(k0)) return;
      const int c = k0 % C, kw = (k0 / C) % G::KW, kh = k0 / C / G::KW;
      const int dh = kh * Cfg::DH, dw = kw * Cfg::DW;
      KILN_IGEMM_UNROLL
      for (int i = 0; i < A_ROWS; ++i) {
        const int ih = a_ih[i] + dh, iw = a_iw[i] + dw;
        if (unsigned(ih) >= unsigned(G::H) || unsigned(iw) >= unsigned(G::W)) continue;
        const Global<const u32> g = gate32 + (a_gate[i] + c) / EPW;
        KILN_IGEMM_UNROLL
        for (int j = 0; j < 4; ++j) {
          const int at = i * ROW_STEP * ROW + j;
          as[at] = scaled(as[at], g[j]);
        }
      }
    }
  }

  // A word of elements times a word of gates, each product rounded to T.
  KILN_FN static u32 scaled(u32 v, u32 g) {
    if constexpr (G::TF32) {
      return bits_of(__uint_as_float(v) * __uint_as_float(g));
    } else {
      const T l = from_float<T>(to_float(lo<T>(v)) * to_float(lo<T>(g)));
      const T h = from_float<T>(to_float(hi<T>(v)) * to_float(hi<T>(g)));
      return pair(l, h);
    }
  }
};

} // namespace kiln::conv::igemm
