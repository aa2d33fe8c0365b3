// Softmax over axis 1 of [N, K, *spatial] and its backward, numerically stable (the maximum
// is subtracted before exp), fp32 arithmetic:
//   forward:  y = exp(x - max) / sum_k exp(x - max)
//   backward: dx = y * (dy - sum_k y * dy), added to dx when ACCUMULATE.
//
// Cfg: T (element type), N, K (classes), S (spatial positions per sample; 1 for [N, K]),
//      CLASS_LAST (class k of position (n, s) at (n*S + s)*K + k: [N, K] and nhwc; otherwise
//      at (n*K + k)*S + s: nchw), THREADS, ACCUMULATE (backward).
// Mapping: CLASS_LAST: one warp per position, its lanes split the K classes (coalesced);
//      otherwise one thread per position, looping over the classes (neighbouring threads
//      read neighbouring positions). Positions are covered by a grid-stride loop.
// Arguments, in order: forward: x, y · backward: y, dy, dx.
// Grid: any (1-D).
#pragma once

#include "common/tensor4.cuh"
#include "dense/reduce.cuh"

namespace kiln::dense {

// The positions (n, s) of a [N, K, S] tensor and where their classes lie.
template <class Cfg> struct ClassRows {
  static constexpr long long P = (long long)Cfg::N * Cfg::S; // positions
  using I = index_t<(long long)Cfg::N * Cfg::K * Cfg::S>;
  static constexpr int LANES = Cfg::CLASS_LAST ? 32 : 1; // threads per position
  static constexpr int PER_BLOCK = Cfg::THREADS / LANES; // positions per block per step
  static constexpr I KSTRIDE = Cfg::CLASS_LAST ? 1 : Cfg::S;
  static_assert(Cfg::THREADS % 32 == 0, "whole warps");

  // Element index of class 0 of position p.
  static KILN_FN I base(I p) {
    if (Cfg::CLASS_LAST) return p * Cfg::K;
    return (p / Cfg::S) * (I(Cfg::K) * Cfg::S) + p % Cfg::S;
  }
  // This thread's first class and its stride over classes.
  static KILN_FN int lane() { return LANES == 1 ? 0 : lane_id(); }
  static KILN_FN I first_position() { return I(blockIdx.x) * PER_BLOCK + I(threadIdx.x) / LANES; }
  static KILN_FN I position_step() { return I(gridDim.x) * PER_BLOCK; }
  // Reductions over the LANES threads of a position (identity for one thread).
  static KILN_FN float max_all(float v) { return LANES == 1 ? v : warp_max(v); }
  static KILN_FN float sum_all(float v) { return LANES == 1 ? v : warp_sum(v); }
};

KILN_FN float minus_infinity() { return __int_as_float(int(0xff800000u)); }

// For position p: the maximum and the sum of exp(x - max) over the classes, in every lane.
template <class Cfg, class G>
KILN_FN void softmax_stats(G x, typename ClassRows<Cfg>::I b, float& mx, float& sum) {
  using R = ClassRows<Cfg>;
  mx = minus_infinity();
  for (int k = R::lane(); k < Cfg::K; k += R::LANES)
    mx = fmaxf(mx, to_float(x[b + k * R::KSTRIDE]));
  mx = R::max_all(mx);
  sum = 0.f;
  for (int k = R::lane(); k < Cfg::K; k += R::LANES)
    sum += expf(to_float(x[b + k * R::KSTRIDE]) - mx);
  sum = R::sum_all(sum);
}

template <class Cfg> KILN_FN void softmax_forward(const KernelArgs& a) {
  using T = typename Cfg::T;
  using R = ClassRows<Cfg>;
  using I = typename R::I;
  const Global<const T> x = arg<const T>(a, 0);
  const Global<T> y = arg<T>(a, 1);
  // p is uniform across the lanes of a position, so the warp collectives are too.
  for (I p = R::first_position(); p < R::P; p += R::position_step()) {
    const I b = R::base(p);
    float mx, sum;
    softmax_stats<Cfg>(x, b, mx, sum);
    const float inv = 1.f / sum;
    for (int k = R::lane(); k < Cfg::K; k += R::LANES) {
      const I i = b + k * R::KSTRIDE;
      y[i] = from_float<T>(expf(to_float(x[i]) - mx) * inv);
    }
  }
}

template <class Cfg> KILN_FN void softmax_backward(const KernelArgs& a) {
  using T = typename Cfg::T;
  using R = ClassRows<Cfg>;
  using I = typename R::I;
  const Global<const T> y = arg<const T>(a, 0), dy = arg<const T>(a, 1);
  const Global<T> dx = arg<T>(a, 2);
  for (I p = R::first_position(); p < R::P; p += R::position_step()) {
    const I b = R::base(p);
    float dot = 0.f;
    for (int k = R::lane(); k < Cfg::K; k += R::LANES) {
      const I i = b + k * R::KSTRIDE;
      dot += to_float(y[i]) * to_float(dy[i]);
    }
    dot = R::sum_all(dot);
    for (int k = R::lane(); k < Cfg::K; k += R::LANES) {
      const I i = b + k * R::KSTRIDE;
      float v = to_float(y[i]) * (to_float(dy[i]) - dot);
      if (Cfg::ACCUMULATE) v += to_float(dx[i]);
      dx[i] = from_float<T>(v);
    }
  }
}

} // namespace kiln::dense
