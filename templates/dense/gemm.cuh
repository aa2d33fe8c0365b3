// A tiled SIMT GEMM for linear layers: out[m, j] = sum_r A(m, r) * B(r, j) over an M x NC
// output (row-major, out[m * NC + j]), with A and B read through compile-time strides, so
// one template serves all three products of a linear layer (x [N, F], w [K, F]):
//   forward          y  = x w^T:  M = N, NC = K, R = F; A = x (A(m, r) = x[m*F + r]),
//                                 B(r, j) = w[j*F + r]; then + bias[j], relu.
//   backward_data    dx = dy w:   M = N, NC = F, R = K; A = dy, B = w (B(r, j) = w[r*F + j]).
//   backward_weight  dw = dy^T x: M = K, NC = F, R = N; A(m, r) = dy[r*K + m], B = x.
// Each block computes a BM x BN tile of the output, walking R in BK steps: both operand
// tiles are staged in shared memory (as fp32, r-major, padded by one element so neither the
// transposing stores nor the reads conflict), each thread accumulating a TM x TN micro-tile
// in registers, its rows and columns strided by BM/TM and BN/TN so that neighbouring threads
// touch neighbouring elements. Edges (sizes that are not multiples of the tiles) are
// zero-filled on load and masked on store. The sum over r runs in a fixed order (fp32).
//
// Cfg: T (element type), M, NC, R, A_SM, A_SR (A(m, r) at A[m*A_SM + r*A_SR]), B_SR, B_SJ
//      (B(r, j) at B[r*B_SR + j*B_SJ]), BIAS, RELU or ACT (the forward's fused epilogue,
//      common/epilogue.cuh), ACCUMULATE (add to the output after it), BM, BN, BK, TM, TN,
//      THREADS = (BM/TM) * (BN/TN).
// Arguments, in order: A, B, [bias when BIAS], out.
// Grid: (ceil(NC / BN), ceil(M / BM)), blocks of THREADS threads.
#pragma once

#include "common/epilogue.cuh"
#include "dense/reduce.cuh"

namespace kiln::dense {

// Loads a ROWS x BK tile of an operand (rows: m of A or j of B, starting at row0; columns:
// r, starting at r0) into tile[r * (ROWS + 1) + row], zero outside [0, ROWS_TOTAL) x [0, R).
// Threads walk the operand's contiguous axis fastest (coalesced global reads).
template <class Cfg, int ROWS, long long ROWS_TOTAL, long long S_ROW, long long S_R, class T>
KILN_FN void load_tile(Global<const T> g, Shared<float> tile, int row0, int r0) {
  constexpr int BK = Cfg::BK;
  constexpr bool r_fast = S_R == 1;
  for (int e = int(threadIdx.x); e < ROWS * BK; e += Cfg::THREADS) {
    const int row = r_fast ? e / BK : e % ROWS;
    const int r = r_fast ? e % BK : e / ROWS;
    const int gr = row0 + row, rr = r0 + r;
    float v = 0.f;
    if (gr < ROWS_TOTAL && rr < Cfg::R) v = to_float(g[i64(gr) * S_ROW + i64(rr) * S_R]);
    tile[r * (ROWS + 1) + row] = v;
  }
}

template <class Cfg> KILN_FN void gemm(const KernelArgs& a) {
  using T = typename Cfg::T;
  constexpr int BM = Cfg::BM, BN = Cfg::BN, BK = Cfg::BK, TM = Cfg::TM, TN = Cfg::TN;
  constexpr int TY = BM / TM, TX = BN / TN; // thread grid over the tile
  static_assert(BM % TM == 0 && BN % TN == 0 && TX * TY == Cfg::THREADS, "tile shape");
  const Global<const T> A = arg<const T>(a, 0), B = arg<const T>(a, 1);
  const Global<T> out = arg<T>(a, Cfg::BIAS ? 3 : 2);
  KILN_SHARED_ARRAY(float, As, BK*(BM + 1));
  KILN_SHARED_ARRAY(float, Bs, BK*(BN + 1));
  const int m0 = int(blockIdx.y) * BM, j0 = int(blockIdx.x) * BN;
  const int tx = int(threadIdx.x) % TX, ty = int(threadIdx.x) / TX;

  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j)
      acc[i][j] = 0.f;

  for (int r0 = 0; r0 < Cfg::R; r0 += BK) {
    load_tile<Cfg, BM, Cfg::M, Cfg::A_SM, Cfg::A_SR>(A, As, m0, r0);
    load_tile<Cfg, BN, Cfg::NC, Cfg::B_SJ, Cfg::B_SR>(B, Bs, j0, r0);
    sync_threads();
#pragma unroll 4
    for (int r = 0; r < BK; ++r) {
      float av[TM], bv[TN];
#pragma unroll
      for (int i = 0; i < TM; ++i)
        av[i] = As[r * (BM + 1) + ty + i * TY];
#pragma unroll
      for (int j = 0; j < TN; ++j)
        bv[j] = Bs[r * (BN + 1) + tx + j * TX];
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j)
          acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
    }
    sync_threads();
  }

#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int m = m0 + ty + i * TY;
    if (m >= Cfg::M) continue;
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      const int jj = j0 + tx + j * TX;
      if (jj >= Cfg::NC) continue;
      float v = Epilogue<T, Cfg::BIAS, false, act_of<Cfg>::value, act_params_of<Cfg>>::apply(
          a, 2, 0, acc[i][j], jj, 0);
      const i64 o = i64(m) * Cfg::NC + jj;
      if (Cfg::ACCUMULATE) v += to_float(out[o]);
      out[o] = from_float<T>(v);
    }
  }
}

} // namespace kiln::dense
