// The implicit GEMM's loads from shared memory to mma fragments, and the mma itself: one
// k-step (8 words of k) of a warp's MT x NT tiles of 16 x 8 outputs. Fragments come by
// ldmatrix.x4 (LDMATRIX) or one 32-bit shared load per register; fp32 operands are rounded
// to tf32 on the way.
#pragma once

#include "conv/igemm/geometry.cuh"

namespace kiln::conv::igemm {

// The mma for one k-step of 8 words: k16 for 16-bit types, k8 tf32 for float.
template <class T> KILN_FN void mma(float (&d)[4], const u32 (&a)[4], const u32 (&b)[2]) {
  if constexpr (is_f32<T>::value)
    mma_m16n8k8_tf32(d, a, b, d);
  else
    mma_m16n8k16(d, a, b, d, T{});
}

template <class Cfg> struct FragmentLoader {
  using G = Geometry<Cfg>;
  static constexpr int MT = G::MT, NT = G::NT, ROW = G::ROW, WTM = G::WTM, WTN = G::WTN;

  Shared<u32> a_smem, b_smem; // stage 0 of the A and B tiles
  WarpTile<Cfg> wt;
  int a_lane, b_lane;

  KILN_FN FragmentLoader(Shared<u32> a, Shared<u32> b, const WarpTile<Cfg>& warp)
      : a_smem(a), b_smem(b), wt(warp) {
    // ldmatrix row addresses: lane l reads row l % 8 of matrix l / 8; A's matrices are the
    // fragment's quarters (rows +8 first, then words +4), B's the two k halves of two n tiles.
    const int lane = lane_id();
    a_lane = ((lane >> 3 & 1) * 8 + (lane & 7)) * ROW + (lane >> 4) * 4;
    b_lane = ((lane >> 4) * 8 + (lane & 7)) * ROW + (lane >> 3 & 1) * 4;
  }

  // acc += A x B over k-step ks of pipeline stage `stage`.
  KILN_FN void multiply(int stage, int ks, float (&acc)[MT][NT][4]) const {
    u32 af[MT][4], bf[NT][2];
    if constexpr (Cfg::LDMATRIX) {
      const Shared<u32> as =
          a_smem + stage * G::A_STAGE + (wt.warp_m * WTM) * ROW + a_lane + ks * 8;
      const Shared<u32> bs =
          b_smem + stage * G::B_STAGE + (wt.warp_n * WTN) * ROW + b_lane + ks * 8;
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
      const Shared<u32> as =
          a_smem + stage * G::A_STAGE + (wt.warp_m * WTM + wt.g) * ROW + wt.t + ks * 8;
      const Shared<u32> bs =
          b_smem + stage * G::B_STAGE + (wt.warp_n * WTN + wt.g) * ROW + wt.t + ks * 8;
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
    if constexpr (G::TF32) {
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
        mma<typename G::T>(acc[i][j], af[i], bf[j]);
    }
  }
};

} // namespace kiln::conv::igemm
