// Layer normalisation over axis 1 of [N, C, *spatial] (each position's C channels), with a
// per-channel weight and bias, and its backward in two kernels. Arithmetic in fp32; every
// sum in a fixed order (no atomics), so results are deterministic.
//
//   forward: mean = sum_c x / C, var = sum_c (x - mean)^2 / C (biased, two passes),
//     invstd = 1 / sqrt(var + EPS), y = (x - mean) * invstd * weight[c] + bias[c].
//   backward: the statistics recomputed as the forward computes them; with g = dy * weight
//     and xhat = (x - mean) * invstd, dx = invstd * (g - mean_c g - xhat * mean_c(g xhat))
//     (added to dx when ACCUMULATE); with STATS, each position's mean and invstd are written
//     to [N, 1, *spatial] buffers for the parameter kernel.
//   backward_params: dweight[c] = sum over positions of dy * xhat, dbias[c] = sum dy (added
//     to what they hold when ACCUMULATE), from the saved statistics.
//   invstd_forward (layernorm_invstd): each position's invstd, as the forward computes it,
//     into [N, 1, *spatial]; invstd_backward: dx = -dy[p] * invstd^3 * (x - mean) / C
//     (added to dx when ACCUMULATE).
//
// Cfg (forward, backward, invstd_*): T, N, K (channels), S (spatial positions; 1 for [N, C]),
//      CLASS_LAST (channels contiguous: nhwc and [N, C]), THREADS, EPS, STATS (backward) and
//      ACCUMULATE (backward, invstd_backward). Mapping as softmax.cuh's ClassRows: a warp per
//      position when channels are contiguous, otherwise a thread per position; grid-stride over
//      positions.
// Cfg (backward_params): T, N, C, S, CHANNELS_LAST, COLS, THREADS, ACCUMULATE; mapping as
//      batchnorm_train.cuh's BnChannel: a block per channel (channel-major) or per COLS
//      neighbouring channels (channels-last); grid ceil(C / COLS).
// Arguments, in order: forward: x, weight, bias, y · backward: x, dy, weight, dx,
//      [mean, invstd] · backward_params: x, dy, mean, invstd, dweight, dbias ·
//      invstd_forward: x, y · invstd_backward: x, dy, dx.
#pragma once

#include "dense/batchnorm_train.cuh"
#include "dense/softmax.cuh"

namespace kiln::dense {

// Mean and 1 / sqrt(biased variance + EPS) of the channels of the position at b, in every
// lane of the position.
template <class Cfg, class G>
KILN_FN void layernorm_stats(G x, typename ClassRows<Cfg>::I b, float& mean, float& invstd) {
  using R = ClassRows<Cfg>;
  float s = 0.f;
  for (int k = R::lane(); k < Cfg::K; k += R::LANES)
    s += to_float(x[b + k * R::KSTRIDE]);
  mean = R::sum_all(s) / float(Cfg::K);
  float q = 0.f;
  for (int k = R::lane(); k < Cfg::K; k += R::LANES) {
    const float d = to_float(x[b + k * R::KSTRIDE]) - mean;
    q += d * d;
  }
  invstd = 1.f / sqrtf(R::sum_all(q) / float(Cfg::K) + Cfg::EPS);
}

template <class Cfg> KILN_FN void layernorm_forward(const KernelArgs& a) {
  using T = typename Cfg::T;
  using R = ClassRows<Cfg>;
  using I = typename R::I;
  const Global<const T> x = arg<const T>(a, 0), w = arg<const T>(a, 1), bias = arg<const T>(a, 2);
  const Global<T> y = arg<T>(a, 3);
  // p is uniform across the lanes of a position, so the warp collectives are too.
  for (I p = R::first_position(); p < R::P; p += R::position_step()) {
    const I b = R::base(p);
    float mean, invstd;
    layernorm_stats<Cfg>(x, b, mean, invstd);
    for (int k = R::lane(); k < Cfg::K; k += R::LANES) {
      const I i = b + k * R::KSTRIDE;
      y[i] = from_float<T>((to_float(x[i]) - mean) * invstd * to_float(w[k]) + to_float(bias[k]));
    }
  }
}

template <class Cfg> KILN_FN void layernorm_backward(const KernelArgs& a) {
  using T = typename Cfg::T;
  using R = ClassRows<Cfg>;
  using I = typename R::I;
  const Global<const T> x = arg<const T>(a, 0), dy = arg<const T>(a, 1), w = arg<const T>(a, 2);
  const Global<T> dx = arg<T>(a, 3);
  for (I p = R::first_position(); p < R::P; p += R::position_step()) {
    const I b = R::base(p);
    float mean, invstd;
    layernorm_stats<Cfg>(x, b, mean, invstd);
    if constexpr (Cfg::STATS) {
      if (R::lane() == 0) {
        arg<T>(a, 4)[p] = from_float<T>(mean);
        arg<T>(a, 5)[p] = from_float<T>(invstd);
      }
    }
    float sg = 0.f, sgx = 0.f;
    for (int k = R::lane(); k < Cfg::K; k += R::LANES) {
      const I i = b + k * R::KSTRIDE;
      const float g = to_float(dy[i]) * to_float(w[k]);
      sg += g;
      sgx += g * (to_float(x[i]) - mean) * invstd;
    }
    sg = R::sum_all(sg) / float(Cfg::K);
    sgx = R::sum_all(sgx) / float(Cfg::K);
    for (int k = R::lane(); k < Cfg::K; k += R::LANES) {
      const I i = b + k * R::KSTRIDE;
      const float xhat = (to_float(x[i]) - mean) * invstd;
      float v = invstd * (to_float(dy[i]) * to_float(w[k]) - sg - xhat * sgx);
      if (Cfg::ACCUMULATE) v += to_float(dx[i]);
      dx[i] = from_float<T>(v);
    }
  }
}

// Position p's statistic is element p of [N, 1, *spatial] in either layout (one channel).
template <class Cfg> KILN_FN void layernorm_invstd_forward(const KernelArgs& a) {
  using T = typename Cfg::T;
  using R = ClassRows<Cfg>;
  using I = typename R::I;
  const Global<const T> x = arg<const T>(a, 0);
  const Global<T> y = arg<T>(a, 1);
  for (I p = R::first_position(); p < R::P; p += R::position_step()) {
    float mean, invstd;
    layernorm_stats<Cfg>(x, R::base(p), mean, invstd);
    if (R::lane() == 0) y[p] = from_float<T>(invstd);
  }
}

template <class Cfg> KILN_FN void layernorm_invstd_backward(const KernelArgs& a) {
  using T = typename Cfg::T;
  using R = ClassRows<Cfg>;
  using I = typename R::I;
  const Global<const T> x = arg<const T>(a, 0), dy = arg<const T>(a, 1);
  const Global<T> dx = arg<T>(a, 2);
  for (I p = R::first_position(); p < R::P; p += R::position_step()) {
    const I b = R::base(p);
    float mean, invstd;
    layernorm_stats<Cfg>(x, b, mean, invstd);
    const float k = -to_float(dy[p]) * invstd * invstd * invstd / float(Cfg::K);
    for (int k2 = R::lane(); k2 < Cfg::K; k2 += R::LANES) {
      const I i = b + k2 * R::KSTRIDE;
      float v = k * (to_float(x[i]) - mean);
      if (Cfg::ACCUMULATE) v += to_float(dx[i]);
      dx[i] = from_float<T>(v);
    }
  }
}

template <class Cfg> KILN_FN void layernorm_backward_params(const KernelArgs& a) {
  using T = typename Cfg::T;
  using Ch = BnChannel<Cfg>;
  using I = typename Ch::I;
  const Global<const T> x = arg<const T>(a, 0), dy = arg<const T>(a, 1);
  const Global<const T> mean = arg<const T>(a, 2), invstd = arg<const T>(a, 3);
  const Global<T> dw = arg<T>(a, 4), db = arg<T>(a, 5);
  KILN_SHARED_ARRAY(float, scratch, Ch::scratch_size(2));
  const Ch ch;
  float sums[2] = {0.f, 0.f}; // sum dy * xhat, sum dy
  // Position j = n * S + s indexes the statistics in either layout (they have one channel).
  const int lim = ch.valid ? Ch::M : 0;
  for (int j = ch.first(); j < lim; j += Ch::step) {
    const I i = ch.index(j);
    const float d = to_float(dy[i]);
    sums[0] += d * (to_float(x[i]) - to_float(mean[j])) * to_float(invstd[j]);
    sums[1] += d;
  }
  ch.totals(sums, scratch);
  if (!ch.valid || ch.first() != 0) return;
  dw[ch.c] = from_float<T>(Cfg::ACCUMULATE ? to_float(dw[ch.c]) + sums[0] : sums[0]);
  db[ch.c] = from_float<T>(Cfg::ACCUMULATE ? to_float(db[ch.c]) + sums[1] : sums[1]);
}

} // namespace kiln::dense
