// Implicit-GEMM convolution on tensor cores (conv2d.forward, NHWC, groups == 1).
//
// GEMM view: rows m = (n, oh, ow) of the output (M = N*OH*OW), columns o (O output channels),
// reduction k = (kh, kw, c) (K = KH*KW*C), so that A[m][k] = x[n][ih][iw][c] (NHWC, zero
// outside the image) and B[k][o] = w[o][kh][kw][c] (weights stored OHWI: row o of B^T is
// contiguous in k). y[m][o] = sum_k A[m][k] B[k][o] + b[o] + residual[m][o], then relu.
//
// Cfg:
//   T                      element type of every tensor: kiln::f16 / kiln::bf16 (mma m16n8k16,
//                          fp32 accumulate) or float (tf32 mma m16n8k8, operands rounded)
//   N, C, H, W             input x [N][H][W][C]
//   O, KH, KW              weights [O][KH][KW][C]
//   SH, SW, PH, PW, DH, DW stride, padding, dilation
//   HAS_BIAS, HAS_RESIDUAL, RELU   the fused epilogue
//   GUARD, THRESHOLD       the dense side of a sparse dispatch: return, writing nothing,
//                          unless the running nonzero count nnz of x exceeds THRESHOLD
//   BM, BN, BK             block tile (BK in elements; BK * sizeof(T) a multiple of 32 bytes)
//   WM, WN                 warps along M and N (THREADS = 32 * WM * WN); warp tile
//                          (BM / WM) x (BN / WN), a multiple of 16 x 8
//   STAGES                 shared-memory pipeline depth (>= 2; cp.async groups on sm_80+)
//   VEC_A, VEC_B           16-byte cp.async loads of A (needs C % (16 / sizeof(T)) == 0) and
//                          B (needs K % (16 / sizeof(T)) == 0); element loads otherwise
//   PAD                    32-bit words of padding per shared row (4 keeps rows 16-byte
//                          aligned and the fragment loads free of bank conflicts)
//   LDMATRIX               fragments by ldmatrix.x4 (else one 32-bit shared load per register)
//   IDX64                  64-bit element offsets (tensors near 2^31 elements or more)
//   X_NCHW                 x is stored NCHW (element loads only, !VEC_A): a network's first
//                          conv reads its NCHW input, or a folded batch's view of it, into
//                          an NHWC network without a conversion
//   SPLIT                  split-K: > 1 splits the reduction into SPLIT ranges of k (their
//                          bounds kb(s) = 16 * floor(s * ceil(K / 16) / SPLIT), kb(SPLIT) = K,
//                          runtime/step_fn.hpp's split_k_begin), each block reducing one range
//                          of one tile into partial[s][m][o] (float, no epilogue); partial.sum
//                          completes y. More blocks when M x O is a few tiles and K is long.
//   POOL                   conv2d.pool_forward: a max pool fused after bias and relu. PKH, PKW,
//                          PSH, PSW, PPH, PPW (window, stride, padding), POH, POW (pooled
//                          extents), PTH x PTW pooled outputs per block: the block's BM rows
//                          are the FH x FW footprint of its pooled tile (FH = (PTH - 1) * PSH
//                          + PKH <= BM / FW, rows past it or outside the conv's output are
//                          -inf), M = N * pooled tiles * BM; the tile is staged in shared
//                          memory and pooled there, y is the pooled output (NHWC).
// Arguments, in order: x, w, [b] (HAS_BIAS), [residual] (HAS_RESIDUAL), [nnz] (GUARD), y; with
//   SPLIT > 1: x, w, partial.
// Grid: 1-D, ceil(M / BM) * ceil(O / BN) * SPLIT blocks; block i reduces range i / TILES of the
//   tile j = i % TILES, (j / NTN, j % NTN) with NTN = ceil(O / BN) (output-channel tiles
//   fastest: neighbours share their A rows).
// Block: THREADS threads. Dynamic shared memory: STAGES * (BM + BN) * (BK * sizeof(T) / 4 + PAD)
//   32-bit words (more than 48 KiB needs the launch's opt-in).
//
// Shared memory holds 32-bit words: two 16-bit elements (consecutive k) or one float per
// word, the unit of the mma fragment registers; row r of a stage's A (or B) tile holds the
// BK k-values of GEMM row m0 + r (or column o0 + r), PAD words apart, so that the eight rows
// one fragment load touches fall in distinct banks (row pitch 20 or 36 words). Pipeline:
// STAGES - 1 k tiles in flight (one cp.async group each) while one is multiplied; a k tile
// is waited for, then a barrier, then the next load goes into the stage freed last.
// Tuning knobs beyond the Cfg: the block raster (output-channel tiles fastest), PAD versus
// an XOR swizzle, and a shared-memory-staged epilogue for 16-byte stores.
#pragma once

#include "common/kiln.cuh"
#include "conv/pool_epilogue.cuh"

#if defined(KILN_CUDA)
#define KILN_IGEMM_UNROLL _Pragma("unroll")
#else
#define KILN_IGEMM_UNROLL
#endif

namespace kiln::conv {

namespace igemm {

template <bool B, class X, class Y> struct pick { using type = X; };
template <class X, class Y> struct pick<false, X, Y> { using type = Y; };

template <class T> struct is_f32 { static constexpr bool value = false; };
template <> struct is_f32<float> { static constexpr bool value = true; };

KILN_FN u32 bits_of(f16 v) { return v.bits; }
KILN_FN u32 bits_of(bf16 v) { return v.bits; }
KILN_FN u32 bits_of(float v) { return __float_as_uint(v); }

// The mma for one k-step of 8 words: k16 for 16-bit types, k8 tf32 for float.
template <class T> KILN_FN void mma(float (&d)[4], const u32 (&a)[4], const u32 (&b)[2]) {
  if constexpr (is_f32<T>::value)
    mma_m16n8k8_tf32(d, a, b, d);
  else
    mma_m16n8k16(d, a, b, d, T{});
}

// Two consecutive elements as one aligned word (u32 for 16-bit types, u64 for float), and back.
KILN_FN u32 pair(f16 a, f16 b) { return u32(a.bits) | u32(b.bits) << 16; }
KILN_FN u32 pair(bf16 a, bf16 b) { return u32(a.bits) | u32(b.bits) << 16; }
KILN_FN u64 pair(float a, float b) {
  return u64(__float_as_uint(a)) | u64(__float_as_uint(b)) << 32;
}
template <class T> KILN_FN T lo(u32 p) { return T{u16(p & 0xffffu)}; }
template <class T> KILN_FN T hi(u32 p) { return T{u16(p >> 16)}; }
template <class T> KILN_FN T lo(u64 p) { return __uint_as_float(u32(p)); }
template <class T> KILN_FN T hi(u64 p) { return __uint_as_float(u32(p >> 32)); }

// The pooled tiling of POOL (conv2d.pool_forward); without it, one "tile" of one pixel.
template <class Cfg, bool = Cfg::POOL> struct pool_tile {
  static constexpr int FH = 1, FW = 1, TILES_W = 1, TILES = 1;
};
template <class Cfg> struct pool_tile<Cfg, true> {
  static constexpr int FH = (Cfg::PTH - 1) * Cfg::PSH + Cfg::PKH;
  static constexpr int FW = (Cfg::PTW - 1) * Cfg::PSW + Cfg::PKW;
  static constexpr int TILES_W = (Cfg::POW + Cfg::PTW - 1) / Cfg::PTW;
  static constexpr int TILES = (Cfg::POH + Cfg::PTH - 1) / Cfg::PTH * TILES_W;
};

} // namespace igemm

template <class Cfg> KILN_FN void implicit_gemm(const KernelArgs& args) {
  using T = typename Cfg::T;
  using I = typename igemm::pick<Cfg::IDX64, i64, int>::type;
  constexpr bool TF32 = igemm::is_f32<T>::value;
  constexpr int C = Cfg::C, H = Cfg::H, W = Cfg::W, O = Cfg::O, KH = Cfg::KH, KW = Cfg::KW;
  // The output size is the instance's (padding after the input may differ from before it:
  // tiles of a tiled segment pad only at the image border).
  constexpr int OH = Cfg::OH, OW = Cfg::OW;
  constexpr bool POOL = Cfg::POOL;
  using PT = igemm::pool_tile<Cfg>;
  constexpr I M = POOL ? I(Cfg::N) * PT::TILES * Cfg::BM : I(Cfg::N) * OH * OW;
  constexpr int K = KH * KW * C;
  constexpr int BM = Cfg::BM, BN = Cfg::BN, BK = Cfg::BK, STAGES = Cfg::STAGES;
  constexpr int THREADS = 32 * Cfg::WM * Cfg::WN;
  constexpr int WTM = BM / Cfg::WM, WTN = BN / Cfg::WN; // warp tile
  constexpr int MT = WTM / 16, NT = WTN / 8;            // mma tiles per warp
  constexpr int ES = int(sizeof(T));
  constexpr int EPW = 4 / ES;            // elements per 32-bit word
  constexpr int VEC = 16 / ES;           // elements per 16-byte chunk
  constexpr int WPR = BK * ES / 4;       // data words per shared row
  constexpr int CPR = WPR / 4;           // 16-byte chunks per shared row
  constexpr int ROW = WPR + Cfg::PAD;    // words per shared row
  constexpr int NTN = (O + BN - 1) / BN; // output-channel tiles
  constexpr int SPLIT = Cfg::SPLIT;
  constexpr I TILES = (M + BM - 1) / BM * NTN;
  static_assert(BK * ES % 32 == 0, "a k tile is whole mma k-steps of 32 bytes");
  static_assert(WTM % 16 == 0 && WTN % 8 == 0 && WTM * Cfg::WM == BM && WTN * Cfg::WN == BN,
                "warp tiles are whole 16x8 mma tiles");
  static_assert(STAGES >= 2, "at least double buffering");
  static_assert(!Cfg::LDMATRIX || NT % 2 == 0, "ldmatrix loads B for two n tiles at once");
  static_assert(Cfg::PAD % 4 == 0, "shared rows stay 16-byte aligned");
  static_assert(!Cfg::VEC_A || C % VEC == 0, "16-byte A loads need C % VEC == 0");
  static_assert(!Cfg::VEC_A || !Cfg::X_NCHW, "an NCHW x is loaded element by element");
  static_assert(!Cfg::VEC_B || K % VEC == 0, "16-byte B loads need K % VEC == 0");
  static_assert(THREADS % CPR == 0 && (BM * CPR) % THREADS == 0 && (BN * CPR) % THREADS == 0,
                "the loaders cover each tile exactly");
  static_assert(SPLIT >= 1 && SPLIT <= (K + 15) / 16, "every k range holds 16 k or more");
  static_assert(SPLIT == 1 || (!Cfg::HAS_BIAS && !Cfg::HAS_RESIDUAL && !Cfg::RELU && !Cfg::GUARD),
                "partial sums carry no epilogue (partial.sum applies it)");
  static_assert(!POOL || (SPLIT == 1 && !Cfg::HAS_RESIDUAL && !Cfg::GUARD &&
                          PT::FH * PT::FW <= BM && BM * (BN + 1) <= STAGES * (BM + BN) * ROW),
                "a pooled tile's footprint fits the block's rows, its staging the pipeline");

  const Global<const T> x = arg<const T>(args, 0);
  const Global<const T> w = arg<const T>(args, 1);
  const Global<const u32> x32 = arg<const u32>(args, 0);
  const Global<const u32> w32 = arg<const u32>(args, 1);
  constexpr int kArgRes = 2 + (Cfg::HAS_BIAS ? 1 : 0);
  constexpr int kArgNnz = kArgRes + (Cfg::HAS_RESIDUAL ? 1 : 0);
  constexpr int kArgY = kArgNnz + (Cfg::GUARD ? 1 : 0);
  if constexpr (Cfg::GUARD) {
    if ((long long)(arg<const int>(args, kArgNnz)[0]) <= (long long)(Cfg::THRESHOLD)) return;
  }

  const Shared<u32> smem = dynamic_shared<u32>();
  constexpr int A_STAGE = BM * ROW, B_STAGE = BN * ROW;
  const Shared<u32> a_smem = smem;
  const Shared<u32> b_smem = smem + STAGES * A_STAGE;

  const int tid = thread_linear();
  const int split = SPLIT == 1 ? 0 : int(I(blockIdx.x) / TILES);
  const I tile = SPLIT == 1 ? I(blockIdx.x) : I(blockIdx.x) % TILES;
  const int tile_n = int(tile % NTN);
  const I m_block = I(tile / NTN) * BM;
  const int n_block = tile_n * BN;
  // This block's range [kb, ke) of k, and the k tiles that hold it (all of K without SPLIT).
  constexpr int K16 = (K + 15) / 16;
  const int kb = SPLIT == 1 ? 0 : 16 * int(i64(split) * K16 / SPLIT);
  const int ke = SPLIT == 1 || split + 1 == SPLIT ? K : 16 * int(i64(split + 1) * K16 / SPLIT);
  const int kt_first = kb / BK, KT = (ke + BK - 1) / BK - kt_first;

  // ---- loaders: each thread owns fixed rows of the A and B tiles and one 16-byte chunk of
  // them (VEC consecutive k), the same in every k tile: one cp.async per chunk with VEC_*,
  // else VEC element loads (zero outside the image / past K) packed into 4 words.
  constexpr int A_ROWS = BM * CPR / THREADS, B_ROWS = BN * CPR / THREADS;
  constexpr int ROW_STEP = THREADS / CPR;
  const int col = tid % CPR, row0 = tid / CPR;
  constexpr int kOutside = -(1 << 29); // an ih that no filter tap brings into the image

  I a_pix[A_ROWS];                // element offset of x[n][ih0][iw0][0] (may lie outside the image)
  int a_ih[A_ROWS], a_iw[A_ROWS]; // ih0 = oh * SH - PH (kOutside past M), iw0 = ow * SW - PW
  KILN_IGEMM_UNROLL
  for (int i = 0; i < A_ROWS; ++i) {
    const I m = m_block + row0 + i * ROW_STEP;
    I n;
    int oh, ow;
    bool valid;
    if constexpr (POOL) { // row r of the footprint of pooled tile tp of image n
      const I pt = m / BM;
      const int r = int(m - pt * BM);
      n = pt / PT::TILES;
      const int tp = int(pt - n * PT::TILES);
      oh = (tp / PT::TILES_W) * Cfg::PTH * Cfg::PSH - Cfg::PPH + r / PT::FW;
      ow = (tp % PT::TILES_W) * Cfg::PTW * Cfg::PSW - Cfg::PPW + r % PT::FW;
      valid = r < PT::FH * PT::FW && oh >= 0 && oh < OH && ow >= 0 && ow < OW;
    } else {
      n = m / (OH * OW);
      const int r = int(m - n * (OH * OW));
      oh = r / OW, ow = r - (r / OW) * OW;
      valid = m < M;
    }
    a_ih[i] = valid ? oh * Cfg::SH - Cfg::PH : kOutside;
    a_iw[i] = ow * Cfg::SW - Cfg::PW;
    a_pix[i] =
        n * (I(H) * W * C) + (I(oh * Cfg::SH - Cfg::PH) * W + a_iw[i]) * (Cfg::X_NCHW ? 1 : C);
  }
  I b_row[B_ROWS]; // element offset of row o of the weights, or -1 past O
  KILN_IGEMM_UNROLL
  for (int i = 0; i < B_ROWS; ++i) {
    const int o = n_block + row0 + i * ROW_STEP;
    b_row[i] = o < O ? I(o) * K : I(-1);
  }

  // k in this block's range (chunks never straddle its bounds: VEC divides 16 and K).
  auto in_range = [&](int k) { return SPLIT == 1 ? k < K : k >= kb && k < ke; };
  auto load_tile = [&](int stage, int kt) {
    const Shared<u32> as = a_smem + stage * A_STAGE + row0 * ROW + col * 4;
    const Shared<u32> bs = b_smem + stage * B_STAGE + row0 * ROW + col * 4;
    const int k0 = kt * BK + col * VEC; // the chunk's first k
    // k = (kh, kw, c): the tap's offset from the pixel, then one element at a time.
    int c = k0 % C, kw = (k0 / C) % KW, kh = k0 / C / KW;
    if constexpr (Cfg::VEC_A) {
      const int dh = kh * Cfg::DH, dw = kw * Cfg::DW, tap = (dh * W + dw) * C + c;
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
                                    : I((khe * Cfg::DH) * W + kwe * Cfg::DW) * C + ce;
          if (ok) words[e / EPW] |= igemm::bits_of(x[a_pix[i] + tap]) << (16 * (e % EPW));
          if (++ce == C) {
            ce = 0;
            if (++kwe == KW) kwe = 0, ++khe;
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
            words[e / EPW] |= igemm::bits_of(w[b_row[i] + k0 + e]) << (16 * (e % EPW));
        KILN_IGEMM_UNROLL
        for (int j = 0; j < 4; ++j)
          bs[i * ROW_STEP * ROW + j] = words[j];
      }
    }
  };

  // ---- main loop: STAGES - 1 tiles in flight while one is multiplied ---------------------
  const int warp = warp_id(), lane = lane_id();
  const int g = lane >> 2, t = lane & 3;
  const int warp_m = warp % Cfg::WM, warp_n = warp / Cfg::WM;
  // ldmatrix row addresses: lane l reads row l % 8 of matrix l / 8; A's matrices are the
  // fragment's quarters (rows +8 first, then words +4), B's the two k halves of two n tiles.
  const int a_lane = ((lane >> 3 & 1) * 8 + (lane & 7)) * ROW + (lane >> 4) * 4;
  const int b_lane = ((lane >> 4) * 8 + (lane & 7)) * ROW + (lane >> 3 & 1) * 4;
  float acc[MT][NT][4];
  KILN_IGEMM_UNROLL
  for (int i = 0; i < MT; ++i) {
    KILN_IGEMM_UNROLL
    for (int j = 0; j < NT; ++j) {
      KILN_IGEMM_UNROLL
      for (int r = 0; r < 4; ++r)
        acc[i][j][r] = 0.0f;
    }
  }

  KILN_IGEMM_UNROLL
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < KT) load_tile(s, kt_first + s);
    cp_async_commit();
  }
  for (int kt = 0; kt < KT; ++kt) {
    cp_async_wait<STAGES - 2>();
    sync_threads();
    const int next = kt + STAGES - 1;
    if (next < KT) load_tile(next % STAGES, kt_first + next);
    cp_async_commit();

    const int stage = kt % STAGES;
    KILN_IGEMM_UNROLL
    for (int ks = 0; ks < WPR / 8; ++ks) {
      u32 af[MT][4], bf[NT][2];
      if constexpr (Cfg::LDMATRIX) {
        const Shared<u32> as = a_smem + stage * A_STAGE + (warp_m * WTM) * ROW + a_lane + ks * 8;
        const Shared<u32> bs = b_smem + stage * B_STAGE + (warp_n * WTN) * ROW + b_lane + ks * 8;
        KILN_IGEMM_UNROLL
        for (int i = 0; i < MT; ++i)
          ldmatrix_x4(af[i], as + i * 16 * ROW);
        KILN_IGEMM_UNROLL
        for (int j = 0; j < NT; j += 2) {
          u32 r[4];
          ldmatrix_x4(r, bs + j * 8 * ROW);
          bf[j][0] = r[0], bf[j][1] = r[1], bf[j + 1][0] = r[2], bf[j + 1][1] = r[3];
        }
      } else {
        const Shared<u32> as = a_smem + stage * A_STAGE + (warp_m * WTM + g) * ROW + t + ks * 8;
        const Shared<u32> bs = b_smem + stage * B_STAGE + (warp_n * WTN + g) * ROW + t + ks * 8;
        KILN_IGEMM_UNROLL
        for (int i = 0; i < MT; ++i) {
          af[i][0] = as[i * 16 * ROW];
          af[i][1] = as[i * 16 * ROW + 8 * ROW];
          af[i][2] = as[i * 16 * ROW + 4];
          af[i][3] = as[i * 16 * ROW + 8 * ROW + 4];
        }
        KILN_IGEMM_UNROLL
        for (int j = 0; j < NT; ++j) {
          bf[j][0] = bs[j * 8 * ROW];
          bf[j][1] = bs[j * 8 * ROW + 4];
        }
      }
      if constexpr (TF32) {
        KILN_IGEMM_UNROLL
        for (int i = 0; i < MT; ++i) {
          KILN_IGEMM_UNROLL
          for (int r = 0; r < 4; ++r)
            af[i][r] = float_to_tf32(__uint_as_float(af[i][r]));
        }
        KILN_IGEMM_UNROLL
        for (int j = 0; j < NT; ++j) {
          KILN_IGEMM_UNROLL
          for (int r = 0; r < 2; ++r)
            bf[j][r] = float_to_tf32(__uint_as_float(bf[j][r]));
        }
      }
      KILN_IGEMM_UNROLL
      for (int i = 0; i < MT; ++i) {
        KILN_IGEMM_UNROLL
        for (int j = 0; j < NT; ++j)
          igemm::mma<T>(acc[i][j], af[i], bf[j]);
      }
    }
  }
  cp_async_wait<0>();

  // ---- epilogue: + bias, + residual, relu, store NHWC (y[m][o]) ---------------------------
  // Each lane holds outputs o and o + 1 (o even) of its rows: with O even they are one
  // aligned pair, loaded and stored as one 4-byte (16-bit T) or 8-byte (float) word.
  constexpr bool PAIRS = O % 2 == 0;
  using Pair = typename igemm::pick<ES == 2, u32, u64>::type;
  if constexpr (SPLIT > 1) {
    // partial[split][m][o]: the raw sums of this range, pairs as one 8-byte store.
    const I base = I(split) * M * O;
    KILN_IGEMM_UNROLL
    for (int j = 0; j < NT; ++j) {
      const int o = n_block + warp_n * WTN + j * 8 + 2 * t;
      KILN_IGEMM_UNROLL
      for (int i = 0; i < MT; ++i) {
        KILN_IGEMM_UNROLL
        for (int h = 0; h < 2; ++h) {
          const I m = m_block + warp_m * WTM + i * 16 + h * 8 + g;
          if (m >= M || o >= O) continue;
          const I at = base + m * O + o;
          if constexpr (PAIRS) {
            arg<u64>(args, 2)[at / 2] = igemm::pair(acc[i][j][2 * h], acc[i][j][2 * h + 1]);
          } else {
            const Global<float> part = arg<float>(args, 2);
            part[at] = acc[i][j][2 * h];
            if (o + 1 < O) part[at + 1] = acc[i][j][2 * h + 1];
          }
        }
      }
    }
    return;
  }
  if constexpr (POOL) {
    // Stage relu?(acc + b) of the footprint (-inf outside the conv's output: the pool's
    // padding) over the drained pipeline's shared memory, then take window maxima there.
    constexpr int YP = BN + 1; // floats per staged row: conflict-free column reads
    const Shared<float> ys = dynamic_shared<float>();
    const float neg_inf = __int_as_float(int(0xff800000u));
    const I pt = m_block / BM, n = pt / PT::TILES;
    const int tp = int(pt - n * PT::TILES);
    const int ph0 = (tp / PT::TILES_W) * Cfg::PTH, pw0 = (tp % PT::TILES_W) * Cfg::PTW;
    sync_threads();
    KILN_IGEMM_UNROLL
    for (int j = 0; j < NT; ++j) {
      const int c = warp_n * WTN + j * 8 + 2 * t, o = n_block + c;
      float bias[2] = {0.0f, 0.0f};
      if constexpr (Cfg::HAS_BIAS) {
        const Global<const T> b = arg<const T>(args, 2);
        if (o < O) bias[0] = to_float(b[o]);
        if (o + 1 < O) bias[1] = to_float(b[o + 1]);
      }
      KILN_IGEMM_UNROLL
      for (int i = 0; i < MT; ++i) {
        KILN_IGEMM_UNROLL
        for (int h = 0; h < 2; ++h) {
          const int r = warp_m * WTM + i * 16 + h * 8 + g;
          const int oh = ph0 * Cfg::PSH - Cfg::PPH + r / PT::FW;
          const int ow = pw0 * Cfg::PSW - Cfg::PPW + r % PT::FW;
          const bool valid = r < PT::FH * PT::FW && oh >= 0 && oh < OH && ow >= 0 && ow < OW;
          KILN_IGEMM_UNROLL
          for (int e = 0; e < 2; ++e) {
            float v = acc[i][j][2 * h + e] + bias[e];
            if constexpr (Cfg::RELU) v = v > 0.0f ? v : 0.0f;
            ys[r * YP + c + e] = valid ? v : neg_inf;
          }
        }
      }
    }
    sync_threads();
    const Global<T> y = arg<T>(args, kArgY);
    for (int e = tid; e < Cfg::PTH * Cfg::PTW * BN; e += THREADS) {
      const int c = e % BN, q = e / BN; // channels fastest: y is NHWC
      const int ph = ph0 + q / Cfg::PTW, pw = pw0 + q % Cfg::PTW, o = n_block + c;
      if (ph >= Cfg::POH || pw >= Cfg::POW || o >= O) continue;
      const float v = staged_window_max<Cfg, PT::FW>(ys, YP, q, c);
      y[((n * Cfg::POH + ph) * Cfg::POW + pw) * O + o] = from_float<T>(v);
    }
    return;
  }
  KILN_IGEMM_UNROLL
  for (int j = 0; j < NT; ++j) {
    const int o = n_block + warp_n * WTN + j * 8 + 2 * t;
    float b0 = 0.0f, b1 = 0.0f;
    if constexpr (Cfg::HAS_BIAS) {
      if constexpr (PAIRS) {
        if (o < O) {
          const Pair p = arg<const Pair>(args, 2)[o / 2];
          b0 = to_float(igemm::lo<T>(p));
          b1 = to_float(igemm::hi<T>(p));
        }
      } else {
        const Global<const T> b = arg<const T>(args, 2);
        if (o < O) b0 = to_float(b[o]);
        if (o + 1 < O) b1 = to_float(b[o + 1]);
      }
    }
    KILN_IGEMM_UNROLL
    for (int i = 0; i < MT; ++i) {
      KILN_IGEMM_UNROLL
      for (int h = 0; h < 2; ++h) {
        const I m = m_block + warp_m * WTM + i * 16 + h * 8 + g;
        if (m >= M || o >= O) continue;
        const I at = m * O + o;
        float v0 = acc[i][j][2 * h] + b0, v1 = acc[i][j][2 * h + 1] + b1;
        if constexpr (Cfg::HAS_RESIDUAL) {
          if constexpr (PAIRS) {
            const Pair p = arg<const Pair>(args, kArgRes)[at / 2];
            v0 += to_float(igemm::lo<T>(p));
            v1 += to_float(igemm::hi<T>(p));
          } else {
            const Global<const T> res = arg<const T>(args, kArgRes);
            v0 += to_float(res[at]);
            if (o + 1 < O) v1 += to_float(res[at + 1]);
          }
        }
        if constexpr (Cfg::RELU) {
          v0 = v0 > 0.0f ? v0 : 0.0f;
          v1 = v1 > 0.0f ? v1 : 0.0f;
        }
        if constexpr (PAIRS) {
          arg<Pair>(args, kArgY)[at / 2] = igemm::pair(from_float<T>(v0), from_float<T>(v1));
        } else {
          const Global<T> y = arg<T>(args, kArgY);
          y[at] = from_float<T>(v0);
          if (o + 1 < O) y[at + 1] = from_float<T>(v1);
        }
      }
    }
  }
}

} // namespace kiln::conv
