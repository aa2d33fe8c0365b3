// Softmax cross-entropy over axis 1 of logits [N, K, *spatial] against integer targets
// [N, *spatial] (one class per position), averaged over the P = N * prod(spatial)
// positions; fp32 arithmetic.
//   forward:  probs = softmax(logits); loss = sum over positions of
//             (log(sum_k exp(x - max)) + max - x[target]) / P.
//   backward: dlogits = (probs - onehot(target)) / P, added to dlogits when ACCUMULATE.
// A target outside [0, K) (where the reference throws) cannot be reported by a kernel: the
// forward then writes a NaN loss, and the backward writes NaN gradients for that position,
// so the error shows instead of training on garbage.
//
// The forward's loss is a single sum over every position, reduced deterministically: the
// whole forward runs in ONE block (fixed per-thread order, then a block tree reduction), so
// it suits classification heads; it is slow for per-pixel losses over large images.
//
// Cfg: T (element type), N, K, S, CLASS_LAST, THREADS (as softmax.cuh), ACCUMULATE (backward).
// Arguments, in order: forward: logits, target, probs, loss · backward: probs, target, dlogits.
// Grid: forward: exactly one block · backward: any (grid-stride loop over the elements).
#pragma once

#include "dense/softmax.cuh"

namespace kiln::dense {

template <class Cfg> KILN_FN void softmax_xent_forward(const KernelArgs& a) {
  using T = typename Cfg::T;
  using R = ClassRows<Cfg>;
  using I = typename R::I;
  const Global<const T> x = arg<const T>(a, 0);
  const Global<const i64> target = arg<const i64>(a, 1);
  const Global<T> probs = arg<T>(a, 2), loss = arg<T>(a, 3);
  KILN_SHARED_ARRAY(float, scratch, Cfg::THREADS / 32);
  float local = 0.f; // this thread's share of the loss, in position order
  for (I p = R::first_position(); p < R::P; p += R::position_step()) {
    const I b = R::base(p);
    float mx, sum;
    softmax_stats<Cfg>(x, b, mx, sum);
    const float inv = 1.f / sum;
    for (int k = R::lane(); k < Cfg::K; k += R::LANES) {
      const I i = b + k * R::KSTRIDE;
      probs[i] = from_float<T>(expf(to_float(x[i]) - mx) * inv);
    }
    if (R::lane() == 0) {
      const i64 t = target[p];
      local += t >= 0 && t < Cfg::K ? logf(sum) + mx - to_float(x[b + I(t) * R::KSTRIDE])
                                    : __int_as_float(0x7fc00000); // NaN: invalid target
    }
  }
  const float total = block_sum<Cfg::THREADS>(local, scratch);
  if (threadIdx.x == 0) loss[0] = from_float<T>(total / float(R::P));
}

template <class Cfg> KILN_FN void softmax_xent_backward(const KernelArgs& a) {
  using T = typename Cfg::T;
  using R = ClassRows<Cfg>;
  using I = typename R::I;
  constexpr I count = I(R::P) * Cfg::K;
  const Global<const T> probs = arg<const T>(a, 0);
  const Global<const i64> target = arg<const i64>(a, 1);
  const Global<T> dlogits = arg<T>(a, 2);
  const float inv = 1.f / float(R::P);
  const I stride = I(gridDim.x) * Cfg::THREADS;
  for (I i = I(blockIdx.x) * Cfg::THREADS + I(threadIdx.x); i < count; i += stride) {
    I p;
    int k;
    if (Cfg::CLASS_LAST) {
      p = i / Cfg::K, k = int(i % Cfg::K);
    } else {
      const I n = i / (I(Cfg::K) * Cfg::S), s = i % Cfg::S;
      p = n * Cfg::S + s, k = int((i / Cfg::S) % Cfg::K);
    }
    const i64 t = target[p];
    const bool valid = t >= 0 && t < Cfg::K;
    float v =
        valid ? (to_float(probs[i]) - (t == k ? 1.f : 0.f)) * inv : __int_as_float(0x7fc00000);
    if (Cfg::ACCUMULATE) v += to_float(dlogits[i]);
    dlogits[i] = from_float<T>(v);
  }
}

} // namespace kiln::dense
