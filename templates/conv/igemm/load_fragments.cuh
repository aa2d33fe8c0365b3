// The implicit GEMM's loads from shared memory to mma fragments, and the mma itself: one
// k-step (8 words of k) of a warp's MT x NT tiles of 16 x 8 outputs. Fragments come by
// ldmatrix.x4 (LDMATRIX) or one 32-bit shared load per register, from rows swizzled or
// padded (Geometry::chunk_at); fp32 operands are rounded to tf32 on the way (the weights
// not where they arrive rounded: B_TF32). Loading and
// multiplying are separate so that the main loop can load the next k-step's fragments while
// this one's mmas run.
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

// One k-step's operands of a warp tile: MT A fragments, NT B fragments.
template <class Cfg> struct Fragments { u32 a[Geometry<Cfg>::MT][4], b[Geometry<Cfg>::NT][2]; };

template <class Cfg> struct FragmentLoader {
  using G = Geometry<Cfg>;
  static constexpr int MT = G::MT, NT = G::NT, ROW = G::ROW, WTM = G::WTM, WTN = G::WTN;

  Shared<u32> a_smem, b_smem; // the warp's first rows of the A and B tiles of stage 0
  // The lane's word offsets in its rows for k-step 0 (ldmatrix: one per operand; 32-bit
  // loads: words t and t + 4). k-step ks is 8 words on: with swizzled rows that is chunk
  // c ^ 2 ks (a row's chunks pair up per k-step), so offset ^ 8 ks; padded, offset + 8 ks.
  int a_col[2], b_col[2];

  KILN_FN static int step_col(int col, int ks) {
    return G::SWIZZLE ? col ^ (8 * ks) : col + 8 * ks;
  }

  KILN_FN FragmentLoader(Shared<u32> a, Shared<u32> b, const WarpTile<Cfg>& wt) {
    // Fragment rows start at multiples of 8 (warp tiles, 16-row A and 8-row B tiles), where
    // the swizzle pattern repeats: the lane's row within its 8 decides its chunks.
    const int lane = lane_id();
    int a_row, b_row, a_chunk, b_chunk;
    if constexpr (Cfg::LDMATRIX) {
      // Lane l gives the address of row l % 8 of matrix l / 8; A's matrices are the
      // fragment's quarters (rows +8 first, then words +4), B's the two k halves of two n
      // tiles.
      a_row = (lane >> 3 & 1) * 8 + (lane & 7), a_chunk = lane >> 4;
      b_row = (lane >> 4) * 8 + (lane & 7), b_chunk = lane >> 3 & 1;
    } else {
      a_row = b_row = wt.g, a_chunk = b_chunk = 0;
    }
    a_smem = a + (wt.warp_m * WTM + a_row) * ROW;
    b_smem = b + (wt.warp_n * WTN + b_row) * ROW;
    const int word = Cfg::LDMATRIX ? 0 : wt.t;
    KILN_IGEMM_UNROLL
    for (int h = 0; h < 2; ++h) { // 32-bit loads: the k-step's two chunks
      a_col[h] = G::chunk_at(a_row, Cfg::LDMATRIX ? a_chunk : h) * 4 + word;
      b_col[h] = G::chunk_at(b_row, Cfg::LDMATRIX ? b_chunk : h) * 4 + word;
    }
  }

  // The fragments of k-step ks of the pipeline stage at word offset `stage`.
  KILN_FN void load(int stage, int ks, Fragments<Cfg>& f) const {
    const Shared<u32> as = a_smem + stage;
    const Shared<u32> bs = b_smem + stage;
    const int a0 = step_col(a_col[0], ks), a1 = step_col(a_col[1], ks);
    const int b0 = step_col(b_col[0], ks), b1 = step_col(b_col[1], ks);
    if constexpr (Cfg::LDMATRIX) {
      KILN_IGEMM_UNROLL
      for (int i = 0; i < MT; ++i)
        ldmatrix_x4(f.a[i], as + i * 16 * ROW + a0);
      KILN_IGEMM_UNROLL
      for (int j = 0; j < NT; j += 2) {
        u32 r[4];
        ldmatrix_x4(r, bs + j * 8 * ROW + b0);
        f.b[j][0] = r[0], f.b[j][1] = r[1], f.b[j + 1][0] = r[2], f.b[j + 1][1] = r[3];
      }
    } else {
      KILN_IGEMM_UNROLL
      for (int i = 0; i < MT; ++i) {
        f.a[i][0] = as[i * 16 * ROW + a0];
        f.a[i][1] = as[i * 16 * ROW + 8 * ROW + a0];
        f.a[i][2] = as[i * 16 * ROW + a1];
        f.a[i][3] = as[i * 16 * ROW + 8 * ROW + a1];
      }
      KILN_IGEMM_UNROLL
      for (int j = 0; j < NT; ++j) {
        f.b[j][0] = bs[j * 8 * ROW + b0];
        f.b[j][1] = bs[j * 8 * ROW + b1];
      }
    }
    if constexpr (G::TF32) {
      if constexpr (!a_tf32_of<Cfg>::value) { // A_TF32: x rounded by its producer's epilogue
        KILN_IGEMM_UNROLL
        for (int i = 0; i < MT; ++i) {
          KILN_IGEMM_UNROLL
          for (int r = 0; r < 4; ++r)
            f.a[i][r] = float_to_tf32(__uint_as_float(f.a[i][r]));
        }
      }
      if constexpr (!b_tf32_of<Cfg>::value) { // weights rounded once, in the prepare phase
        KILN_IGEMM_UNROLL
        for (int j = 0; j < NT; ++j) {
          KILN_IGEMM_UNROLL
          for (int r = 0; r < 2; ++r)
            f.b[j][r] = float_to_tf32(__uint_as_float(f.b[j][r]));
        }
      }
    }
  }

  // acc += the k-step held in f.
  KILN_FN void multiply(const Fragments<Cfg>& f, float (&acc)[MT][NT][4]) const {
    KILN_IGEMM_UNROLL
    for (int i = 0; i < MT; ++i) {
      KILN_IGEMM_UNROLL
      for (int j = 0; j < NT; ++j)
        mma<typename G::T>(acc[i][j], f.a[i], f.b[j]);
    }
  }
};

} // namespace kiln::conv::igemm
