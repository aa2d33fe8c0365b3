// linear.forward for small batches (a weight matrix streamed once, too few outputs to fill
// a GPU with GEMM tiles: y [1, 128] from x [1, 10000], y [8, 4096] from x [8, 25088]):
// one block per output feature k and group of NB batch rows, computing
// y[n, k] = bias[k] + sum_f x[n, f] * w[k, f] for n in [n0, n0 + NB). Its threads split the
// F-long dot products (coalesced reads; each w element is read once and used for NB rows),
// then a block tree reduction per row; then the fused epilogue (common/epilogue.cuh). Each thread
// sums its strided share in f order, so the result is deterministic. fp32 arithmetic.
//
// Cfg: T (element type), N, F, K, NB (batch rows per block, <= N), BIAS, RELU or ACT, THREADS.
// Arguments, in order: x, w, [b when BIAS], y.
// Grid: K * ceil(N / NB) blocks (blockIdx.x = k * ceil(N / NB) + row group: the blocks
// sharing a weight row run together, so the row comes from L2 after the first) of THREADS.
#pragma once

#include "common/epilogue.cuh"
#include "dense/reduce.cuh"

namespace kiln::dense {

template <class Cfg> KILN_FN void linear_dot(const KernelArgs& a) {
  using T = typename Cfg::T;
  constexpr int NB = Cfg::NB, GROUPS = (Cfg::N + NB - 1) / NB;
  const Global<const T> x = arg<const T>(a, 0), w = arg<const T>(a, 1);
  const Global<T> y = arg<T>(a, Cfg::BIAS ? 3 : 2);
  KILN_SHARED_ARRAY(float, scratch, NB* Cfg::THREADS / 32);
  const int k = int(blockIdx.x) / GROUPS, n0 = int(blockIdx.x) % GROUPS * NB;
  const Global<const T> wr = w + i64(k) * Cfg::F;
  float s[NB];
#pragma unroll
  for (int i = 0; i < NB; ++i)
    s[i] = 0.f;
  for (int f = int(threadIdx.x); f < Cfg::F; f += Cfg::THREADS) {
    const float wv = to_float(wr[f]);
#pragma unroll
    for (int i = 0; i < NB; ++i)
      if (Cfg::N % NB == 0 || n0 + i < Cfg::N)
        s[i] = fmaf(to_float(x[i64(n0 + i) * Cfg::F + f]), wv, s[i]);
  }
  block_sums<Cfg::THREADS, NB>(s, scratch);
  if (threadIdx.x != 0) return;
  using E = Epilogue<T, Cfg::BIAS, false, act_of<Cfg>::value, act_params_of<Cfg>>;
  const float b = Cfg::BIAS ? to_float(arg<const T>(a, 2)[k]) : 0.f;
#pragma unroll
  for (int i = 0; i < NB; ++i) {
    if (n0 + i >= Cfg::N) break;
    y[i64(n0 + i) * Cfg::K + k] = from_float<T>(E::apply(s[i], b, 0.f));
  }
}

} // namespace kiln::dense
