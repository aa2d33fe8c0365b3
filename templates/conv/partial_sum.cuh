// The sum of partial sums (partial.sum): dst[i] = (dst[i] if ACCUMULATE) + partial[0][i] +
// partial[1][i] + ... in that order, fp32, whatever dst's type; what completes a weight
// gradient that conv/sparse_backward_weight.cuh reduced in SLICES ranges of the input's rows.
// With GUARD (the sparse side of a dispatch, as the weight gradient it completes) it returns,
// writing nothing, when the running nonzero count nnz exceeds THRESHOLD.
//
// Cfg: T (dst: float, f16, bf16), COUNT (elements of dst), SLICES, ACCUMULATE, GUARD,
//      THRESHOLD, THREADS.
// Arguments, in order: partial (float [SLICES][COUNT]), [nnz] (GUARD), dst.
// Grid: any; a grid-stride loop covers COUNT.
#pragma once

#include "conv/index.cuh"

namespace kiln::conv {

template <class Cfg> KILN_FN void partial_sum(const KernelArgs& a) {
  using T = typename Cfg::T;
  if constexpr (Cfg::GUARD) {
    if (i64(arg<const int>(a, 1)[0]) > i64(Cfg::THRESHOLD)) return; // the dense path ran
  }
  using I = index_t<i64(Cfg::SLICES) * Cfg::COUNT>;
  const Global<const float> partial = arg<const float>(a, 0);
  const Global<T> dst = arg<T>(a, Cfg::GUARD ? 2 : 1);
  const I stride = I(gridDim.x) * Cfg::THREADS;
  for (I i = I(blockIdx.x) * Cfg::THREADS + I(threadIdx.x); i < Cfg::COUNT; i += stride) {
    float v = Cfg::ACCUMULATE ? to_float(dst[i]) : 0.f;
    for (int s = 0; s < Cfg::SLICES; ++s)
      v += partial[I(s) * Cfg::COUNT + i];
    dst[i] = from_float<T>(v);
  }
}

} // namespace kiln::conv
