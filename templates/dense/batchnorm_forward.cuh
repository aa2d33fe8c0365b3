// Batchnorm in inference mode over axis 1 of [N, C, *spatial], with the running statistics:
//   y = act((x - running_mean) * weight / sqrt(running_var + eps) + bias), the activation of
// the fused epilogue (common/epilogue.cuh). Per-channel scale and shift are computed in the
// kernel (fp32) from the parameters.
//
// Cfg: T (element type), N, C, S (spatial size per (n, c); 1 for [N, C]),
//      CHANNELS_LAST (element (n, c, s) at (n*S + s)*C + c: nhwc and [N, C]; otherwise at
//      (n*C + c)*S + s: nchw), EPS, RELU or ACT, STAGE (compute scale and shift once per
//      block into shared memory, 2*C floats; otherwise per element), THREADS; X_PITCH
//      (optional: x a channel window of a concat's output, its runs, C*S elements per image
//      in nchw or C per position channels-last, X_PITCH apart).
// Arguments, in order: x, weight, bias, running_mean, running_var, y.
// Grid: any; a grid-stride loop covers the N*C*S elements, one per thread per step.
#pragma once

#include "common/epilogue.cuh"
#include "common/tensor4.cuh"

namespace kiln::dense {

template <class Cfg> KILN_FN void batchnorm_forward(const KernelArgs& a) {
  using T = typename Cfg::T;
  constexpr long long count = (long long)Cfg::N * Cfg::C * Cfg::S;
  // (An x read through a pitch spans N runs of X_PITCH, N * S channels-last.)
  constexpr long long x_span =
      x_pitch_of<Cfg, 0>::value * Cfg::N * (Cfg::CHANNELS_LAST ? Cfg::S : 1);
  using I = index_t<(count > x_span ? count : x_span)>;
  using E = Epilogue<T, false, false, act_of<Cfg>::value, act_params_of<Cfg>>;
  const Global<const T> x = arg<const T>(a, 0);
  const Global<const T> gamma = arg<const T>(a, 1), beta = arg<const T>(a, 2);
  const Global<const T> mean = arg<const T>(a, 3), var = arg<const T>(a, 4);
  const Global<T> y = arg<T>(a, 5);
  constexpr long long RUN = Cfg::CHANNELS_LAST ? Cfg::C : (long long)Cfg::C * Cfg::S;
  constexpr long long XP = x_pitch_of<Cfg, RUN>::value;

  const auto channel = [](I i) -> int {
    return Cfg::CHANNELS_LAST ? int(i % Cfg::C) : int((i / Cfg::S) % Cfg::C);
  };
  const I stride = I(gridDim.x) * Cfg::THREADS;
  const I first = I(blockIdx.x) * Cfg::THREADS + I(threadIdx.x);
  if constexpr (Cfg::STAGE) {
    KILN_SHARED_ARRAY(float, scale, Cfg::C);
    KILN_SHARED_ARRAY(float, shift, Cfg::C);
    for (int c = int(threadIdx.x); c < Cfg::C; c += Cfg::THREADS) {
      const ScaleShift ss = batchnorm_scale_shift(gamma, beta, mean, var, Cfg::EPS, c);
      scale[c] = ss.scale;
      shift[c] = ss.shift;
    }
    sync_threads();
    for (I i = first; i < count; i += stride) {
      const int c = channel(i);
      const float xi = to_float(x[pitched_index<RUN, XP>(i)]);
      y[i] = from_float<T>(E::apply(xi, ScaleShift{scale[c], shift[c]}, 0.f, 0.f));
    }
  } else {
    for (I i = first; i < count; i += stride) {
      // Too many channels to stage: the scale per element, the shift as (x - mean) + beta.
      const int c = channel(i);
      const float sc = to_float(gamma[c]) / sqrtf(to_float(var[c]) + Cfg::EPS);
      const float xi = to_float(x[pitched_index<RUN, XP>(i)]);
      const float v = (xi - to_float(mean[c])) * sc + to_float(beta[c]);
      y[i] = from_float<T>(E::apply(v, 0.f, 0.f));
    }
  }
}

} // namespace kiln::dense
