// The mean squared error of logits against a teacher's logits (same shape, COUNT elements),
// torch.nn.functional.mse_loss with mean reduction; fp32 arithmetic.
//   forward:  loss = sum over elements of (logits - target)^2 / COUNT.
//   backward: dlogits = 2 (logits - target) / COUNT, added to dlogits when ACCUMULATE.
// Layout-agnostic (logits and target share one). The forward's loss is one sum, reduced
// deterministically in ONE block (each thread's elements in order, then a block tree sum), so
// results are bit-identical run to run.
//
// Cfg: T (element type), COUNT, THREADS (a multiple of 32), ACCUMULATE (backward).
// Arguments, in order: forward: logits, target, loss · backward: logits, target, dlogits.
// Grid: forward: exactly one block · backward: any (grid-stride loop).
#pragma once

#include "dense/reduce.cuh"

namespace kiln::elementwise {

template <class Cfg> KILN_FN void mse_forward(const KernelArgs& a) {
  using T = typename Cfg::T;
  const Global<const T> x = arg<const T>(a, 0), t = arg<const T>(a, 1);
  const Global<T> loss = arg<T>(a, 2);
  KILN_SHARED_ARRAY(float, scratch, Cfg::THREADS / 32);
  float local = 0.f;
  for (i64 i = threadIdx.x; i < Cfg::COUNT; i += Cfg::THREADS) {
    const float d = to_float(x[i]) - to_float(t[i]);
    local += d * d;
  }
  const float total = dense::block_sum<Cfg::THREADS>(local, scratch);
  if (threadIdx.x == 0) loss[0] = from_float<T>(total / float(Cfg::COUNT));
}

template <class Cfg> KILN_FN void mse_backward(const KernelArgs& a) {
  using T = typename Cfg::T;
  const Global<const T> x = arg<const T>(a, 0), t = arg<const T>(a, 1);
  const Global<T> dx = arg<T>(a, 2);
  const float scale = 2.f / float(Cfg::COUNT);
  const i64 stride = i64(gridDim.x) * Cfg::THREADS;
  for (i64 i = i64(blockIdx.x) * Cfg::THREADS + threadIdx.x; i < Cfg::COUNT; i += stride) {
    float v = (to_float(x[i]) - to_float(t[i])) * scale;
    if (Cfg::ACCUMULATE) v += to_float(dx[i]);
    dx[i] = from_float<T>(v);
  }
}

} // namespace kiln::elementwise
