// The sum of partial sums (partial.sum): dst[i] = (dst[i] if ACCUMULATE) + partial[0][i] +
// partial[1][i] + ... in that order, fp32, whatever dst's type, then the fused epilogue of the
// step it completes (common/epilogue.cuh): + b[channel of i], + residual[i], the activation. What
// completes a weight gradient that conv/sparse_backward_weight.cuh reduced in SLICES ranges of the
// input's rows, and a conv or linear forward that conv/implicit_gemm.cuh split over SLICES ranges
// of its reduction. With GUARD (the sparse side of a dispatch, as the weight gradient it completes)
// it returns, writing nothing, when the running nonzero count nnz exceeds THRESHOLD.
//
// Cfg: T (dst: float, f16, bf16), COUNT (elements of dst), SLICES, ACCUMULATE, GUARD,
//      THRESHOLD, THREADS; HAS_BIAS, HAS_RESIDUAL, RELU or ACT; CHANNELS and INNER: element i's
//      channel is (i / INNER) % CHANNELS (INNER 1 for NHWC and [N, K], H * W for NCHW).
// Arguments, in order: partial (float [SLICES][COUNT]), [b] (HAS_BIAS), [residual]
//   (HAS_RESIDUAL), [nnz] (GUARD), dst.
// Grid: any; a grid-stride loop covers COUNT.
#pragma once

#include "common/epilogue.cuh"
#include "common/tensor4.cuh"

namespace kiln::conv {

template <class Cfg> KILN_FN void partial_sum(const KernelArgs& a) {
  using T = typename Cfg::T;
  constexpr int kB = 1, kRes = kB + (Cfg::HAS_BIAS ? 1 : 0);
  constexpr int kNnz = kRes + (Cfg::HAS_RESIDUAL ? 1 : 0), kDst = kNnz + (Cfg::GUARD ? 1 : 0);
  if constexpr (Cfg::GUARD) {
    if (i64(arg<const int>(a, kNnz)[0]) > i64(Cfg::THRESHOLD)) return; // the dense path ran
  }
  using I = index_t<i64(Cfg::SLICES) * Cfg::COUNT>;
  const Global<const float> partial = arg<const float>(a, 0);
  const Global<T> dst = arg<T>(a, kDst);
  const I stride = I(gridDim.x) * Cfg::THREADS;
  for (I i = I(blockIdx.x) * Cfg::THREADS + I(threadIdx.x); i < Cfg::COUNT; i += stride) {
    float v = Cfg::ACCUMULATE ? to_float(dst[i]) : 0.f;
    for (int s = 0; s < Cfg::SLICES; ++s)
      v += partial[I(s) * Cfg::COUNT + i];
    const int channel = Cfg::HAS_BIAS ? int((i / Cfg::INNER) % Cfg::CHANNELS) : 0;
    dst[i] = from_float<T>(epilogue_of<Cfg>::apply(a, kB, kRes, v, channel, i));
  }
}

} // namespace kiln::conv
