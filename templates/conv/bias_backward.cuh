// Bias gradient (bias.backward): db[c] = dy summed over every axis but 1, for conv2d
// (dy [N, C, H, W], NCHW: S = H * W) or linear (dy [N, C]: S = 1). fp32 accumulation in a
// fixed order: deterministic, no atomics.
//
// Cfg: T (float, f16, bf16), N, C, S (elements per (n, c) row), ACCUMULATE (add into db),
//      PER_BLOCK (true: a block per channel, its threads striding over the N * S elements,
//      then a tree reduction in shared memory; false: a thread per channel summing its
//      N * S elements in order), THREADS (a power of two).
// Arguments, in order: dy, db.
// Grid: PER_BLOCK: C blocks; otherwise ceil(C / THREADS).
#pragma once

#include "common/tensor4.cuh"

namespace kiln::conv {

template <class Cfg> KILN_FN void bias_backward(const KernelArgs& a) {
  using T = typename Cfg::T;
  constexpr int S = Cfg::S, THREADS = Cfg::THREADS;
  static_assert((THREADS & (THREADS - 1)) == 0, "THREADS must be a power of two");
  using I = index_t<i64(Cfg::N) * Cfg::C * S>;
  const Global<const T> dy = arg<const T>(a, 0);
  const Global<T> db = arg<T>(a, 1);
  const int t = int(threadIdx.x);
  if (Cfg::PER_BLOCK) {
    KILN_SHARED_ARRAY(float, part, THREADS);
    const int c = int(blockIdx.x);
    float v = 0.f;
    for (I e = t; e < I(Cfg::N) * S; e += THREADS)
      v += to_float(dy[((e / S) * Cfg::C + c) * S + e % S]);
    part[t] = v;
    sync_threads();
    for (int half = THREADS / 2; half > 0; half /= 2) {
      if (t < half) {
        const float lo = part[t], hi = part[t + half];
        part[t] = lo + hi;
      }
      sync_threads();
    }
    if (t == 0) {
      float sum = part[0];
      if (Cfg::ACCUMULATE) sum += to_float(db[c]);
      db[c] = from_float<T>(sum);
    }
  } else {
    const int c = int(blockIdx.x) * THREADS + t;
    if (c >= Cfg::C) return;
    float v = 0.f;
    for (int n = 0; n < Cfg::N; ++n)
      for (int i = 0; i < S; ++i)
        v += to_float(dy[(I(n) * Cfg::C + c) * S + i]);
    if (Cfg::ACCUMULATE) v += to_float(db[c]);
    db[c] = from_float<T>(v);
  }
}

} // namespace kiln::conv
