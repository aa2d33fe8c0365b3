// Batchnorm in inference mode over axis 1 of [N, C, *spatial], with the running statistics:
//   y = act((x - running_mean) * weight / sqrt(running_var + eps) + bias), the activation of
// the fused epilogue (common/epilogue.cuh). Per-channel scale and shift are computed in the
// kernel (fp32) from the parameters.
//
// Cfg: T (element type), N, C, S (spatial size per (n, c); 1 for [N, C]),
//      CHANNELS_LAST (element (n, c, s) at (n*S + s)*C + c: nhwc and [N, C]; otherwise at
//      (n*C + c)*S + s: nchw), EPS, RELU or ACT, STAGE (compute scale and shift once per
//      block into shared memory, 2*C floats; otherwise per element), THREADS.
// Arguments, in order: x, weight, bias, running_mean, running_var, y.
// Grid: any; a grid-stride loop covers the N*C*S elements, one per thread per step.
#pragma once

#include "common/epilogue.cuh"
#include "common/tensor4.cuh"

namespace kiln::dense {

template <class Cfg> KILN_FN void batchnorm_forward(const KernelArgs& a) {
  using T = typename Cfg::T;
  constexpr long long count = (long long)Cfg::N * Cfg::C * Cfg::S;
  using I = index_t<count>;
  using E = Epilogue<T, false, false, act_of<Cfg>::value, act_params_of<Cfg>>;
  const Global<const T> x = arg<const T>(a, 0);
  const Global<const T> gamma = arg<const T>(a, 1), beta = arg<const T>(a, 2);
  const Global<const T> mean = arg<const T>(a, 3), var = arg<const T>(a, 4);
  const Global<T> y = arg<T>(a, 5);

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
      y[i] = from_float<T>(E::apply(to_float(x[i]), ScaleShift{scale[c], shift[c]}, 0.f, 0.f));
    }
  } else {
    for (I i = first; i < count; i += stride) {
      // Too many channels to stage: the scale per element, the shift as (x - mean) + beta.
      const int c = channel(i);
      const float sc = to_float(gamma[c]) / sqrtf(to_float(var[c]) + Cfg::EPS);
      const float v = (to_float(x[i]) - to_float(mean[c])) * sc + to_float(beta[c]);
      y[i] = from_float<T>(E::apply(v, 0.f, 0.f));
    }
  }
}

} // namespace kiln::dense
