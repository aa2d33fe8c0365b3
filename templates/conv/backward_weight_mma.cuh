// Weight gradient of a convolution on tensor cores (conv2d.backward_weight, NHWC x and dy, one
// group, f16 or bf16, fp32 accumulation): per block a BM x BN tile of the GEMM
//   dw[o][n] = sum over positions r of dy[r][o] * x[r shifted by tap(n)][c(n)],
// r = (img * OH + oh) * OW + ow, n = tap * C + c with tap = kh * KW + kw (a tile stays within
// one tap: C % BN == 0; with GATHER, for C not a multiple of 8 (the stem's 3), a tile's
// columns run across taps, the last tile partial, and x is staged element by element), x zero
// outside the image. The positions are the reduction: SLICES
// blocks share a tile, slice s taking [s * R / SLICES, (s + 1) * R / SLICES), each writing
// its own fp32 slice of `partial` (partial.sum adds them in slice order) or, with one slice,
// dw itself. Each BK-position step stages dy's and x's 16-byte channel runs transposed into
// shared rows of positions (A [BM][BK], B [BN][BK], K-major as mma.sync's row.col operands
// want), then 4 warps (2 x 2, warp tiles 32 x BN/2) run m16n8k16 mmas on ldmatrix fragments.
// Every sum has a fixed order: results are deterministic.
//
// Cfg: T (f16, bf16), N, C, H, W, O, OH, OW, KH, KW, SH, SW, PH, PW, DH, DW, G (1),
//      BM (64), BN (32 or 64), BK (32), SLICES, PARTIAL (write fp32 slices: [SLICES][O][C][KH][KW];
//      else dw, OIHW, as T), THREADS (128), GATHER (optional; absent: false).
// Arguments, in order: x, dy, out (partial or dw).
// Grid: x = ceil(KH * KW * C / BN), y = ceil(O / BM), z = SLICES.
#pragma once

#include "common/tensor4.cuh"

namespace kiln::conv {

// GATHER: absent, false.
template <class Cfg, class = void> struct wgrad_gather { static constexpr bool value = false; };
template <class Cfg> struct wgrad_gather<Cfg, decltype(void(Cfg::GATHER))> {
  static constexpr bool value = Cfg::GATHER;
};

template <class Cfg> KILN_FN void backward_weight_mma(const KernelArgs& a) {
  using T = typename Cfg::T;
  constexpr int C = Cfg::C, O = Cfg::O, KW = Cfg::KW, KK = Cfg::KH * KW;
  constexpr int BM = Cfg::BM, BN = Cfg::BN, BK = Cfg::BK;
  constexpr int ROW = BK + 8; // halves a shared row holds: 80 bytes, so ldmatrix is conflict-free
  constexpr int WTN = BN / 2, NT = WTN / 8, MT = 2;
  constexpr i64 R = i64(Cfg::N) * Cfg::OH * Cfg::OW;
  constexpr bool GATHER = wgrad_gather<Cfg>::value;
  static_assert(Cfg::G == 1 && (GATHER || (C % BN == 0 && C % 8 == 0)) && O % 8 == 0 && BM == 64 &&
                    BK == 32 && (BN == 32 || BN == 64) && Cfg::THREADS == 128,
                "one group; whole 16-byte channel runs (or GATHER); 4 warps of 32 x BN/2");
  constexpr i64 XE = i64(Cfg::N) * Cfg::H * Cfg::W * C, YE = R * O;
  using I = index_t<(XE > YE ? XE : YE) + 1>;

  const Global<const T> x = arg<const T>(a, 0), dy = arg<const T>(a, 1);
  KILN_SHARED_ARRAY(T, as, BM * ROW);
  KILN_SHARED_ARRAY(T, bs, BN * ROW);

  const int n0 = int(blockIdx.x) * BN, tap = n0 / C, c0 = n0 % C; // without GATHER, one tap
  const int m0 = int(blockIdx.y) * BM;
  const I r_begin = I(i64(blockIdx.z) * R / Cfg::SLICES);
  const I r_end = I((i64(blockIdx.z) + 1) * R / Cfg::SLICES);
  const int t = int(threadIdx.x), lane = lane_id(), warp = t / 32;
  const int wm = (warp & 1) * 32, wn = (warp >> 1) * WTN;

  float acc[MT][NT][4];
  for (int i = 0; i < MT; ++i)
    for (int j = 0; j < NT; ++j)
      for (int q = 0; q < 4; ++q)
        acc[i][j][q] = 0.f;

  // 16-byte runs of 8 channels: a warp's lanes take one run of 32 neighbouring positions, so
  // their transposing stores fill consecutive halves of a shared row (no bank conflicts).
  using Run = Pack<T, 8>; // one 16-byte load
  const auto stage = [&](Shared<T> dst, int runs, int rows, auto&& src) {
    for (int e = t; e < runs * BK; e += Cfg::THREADS) {
      const int k = e % BK, run = e / BK;
      Run v{};
      if (run * 8 < rows) src(k, run, v);
      for (int q = 0; q < 8; ++q)
        dst[(run * 8 + q) * ROW + k] = v.e[q];
    }
  };
  // The index of x's pixel (its channel 0) that position r reads for tap tp, or -1 outside
  // the image.
  const auto pixel = [&](I r, int tp) -> I {
    const int ow = int(r % Cfg::OW), oh = int((r / Cfg::OW) % Cfg::OH);
    const I img = r / (i64(Cfg::OW) * Cfg::OH);
    const int ih = oh * Cfg::SH - Cfg::PH + tp / KW * Cfg::DH;
    const int iw = ow * Cfg::SW - Cfg::PW + tp % KW * Cfg::DW;
    if (ih < 0 || ih >= Cfg::H || iw < 0 || iw >= Cfg::W) return I(-1);
    return ((img * Cfg::H + ih) * Cfg::W + iw) * C;
  };
  for (I r0 = r_begin; r0 < r_end; r0 += BK) {
    stage(as, BM / 8, O - m0, [&](int k, int run, Run& v) {
      const I r = r0 + k;
      if (r < r_end) v = view_as<const Run>(dy + (r * O + m0 + run * 8))[0];
    });
    if constexpr (GATHER) {
      // Element by element: consecutive threads take consecutive positions of a column, so
      // their stores fill consecutive halves of a shared row.
      for (int e = t; e < BN * BK; e += Cfg::THREADS) {
        const int k = e % BK, col = e / BK;
        const I r = r0 + k;
        const int n = n0 + col; // tap n / C, channel n % C
        const I px = r < r_end && n < KK * C ? pixel(r, n / C) : I(-1);
        bs[col * ROW + k] = px < 0 ? T{} : T(x[px + n % C]);
      }
    } else {
      stage(bs, BN / 8, BN, [&](int k, int run, Run& v) {
        const I r = r0 + k;
        const I px = r < r_end ? pixel(r, tap) : I(-1);
        if (px >= 0) v = view_as<const Run>(x + (px + c0 + run * 8))[0];
      });
    }
    sync_threads();
    for (int ks = 0; ks < BK; ks += 16) {
      // Lane l addresses row l % 8 of matrix l / 8: A's the fragment's quarters (rows + 8
      // first, then k + 8), B's the two k halves of two n tiles.
      u32 af[MT][4], bf[NT][2];
      for (int i = 0; i < MT; ++i)
        ldmatrix_x4(af[i], as + (wm + i * 16 + (lane >> 3 & 1) * 8 + (lane & 7)) * ROW + ks +
                               (lane >> 4) * 8);
      for (int j = 0; j < NT; j += 2) {
        u32 r4[4];
        ldmatrix_x4(r4, bs + (wn + j * 8 + (lane >> 4) * 8 + (lane & 7)) * ROW + ks +
                            (lane >> 3 & 1) * 8);
        bf[j][0] = r4[0], bf[j][1] = r4[1], bf[j + 1][0] = r4[2], bf[j + 1][1] = r4[3];
      }
      for (int i = 0; i < MT; ++i)
        for (int j = 0; j < NT; ++j)
          mma_m16n8k16(acc[i][j], af[i], bf[j], acc[i][j], T{});
    }
    sync_threads();
  }

  // The lane's outputs: rows g and g + 8 of each m16 tile, columns 2t and 2t + 1 of each n8.
  const int g = lane / 4, tq = lane % 4;
  for (int i = 0; i < MT; ++i)
    for (int j = 0; j < NT; ++j)
      for (int q = 0; q < 4; ++q) {
        const int o = m0 + wm + i * 16 + g + (q >> 1) * 8;
        const int n = n0 + wn + j * 8 + 2 * tq + (q & 1); // column: tap n / C, channel n % C
        if (o >= O || n >= KK * C) continue;
        const i64 at = (i64(o) * C + n % C) * KK + n / C; // OIHW
        if constexpr (Cfg::PARTIAL)
          arg<float>(a, 2)[i64(blockIdx.z) * O * C * KK + at] = acc[i][j][q];
        else
          arg<T>(a, 2)[at] = from_float<T>(acc[i][j][q]);
      }
}

} // namespace kiln::conv
