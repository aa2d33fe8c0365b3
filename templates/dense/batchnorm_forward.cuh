// Batchnorm in inference mode over axis 1 of [N, C, *spatial], with the running statistics:
//   y = (x - running_mean) * weight / sqrt(running_var + eps) + bias, then relu when RELU.
// Per-channel scale and shift are computed in the kernel (fp32) from the parameters.
//
// Cfg: T (element type), N, C, S (spatial size per (n, c); 1 for [N, C]),
//      CHANNELS_LAST (element (n, c, s) at (n*S + s)*C + c: nhwc and [N, C]; otherwise at
//      (n*C + c)*S + s: nchw), EPS, RELU, STAGE (compute scale and shift once per block into
//      shared memory, 2*C floats; otherwise per element), THREADS.
// Arguments, in order: x, weight, bias, running_mean, running_var, y.
// Grid: any; a grid-stride loop covers the N*C*S elements, one per thread per step.
#pragma once

#include "dense/reduce.cuh"

namespace kiln::dense {

template <class Cfg> KILN_FN void batchnorm_forward(const KernelArgs& a) {
  using T = typename Cfg::T;
  constexpr long long count = (long long)Cfg::N * Cfg::C * Cfg::S;
  using I = index_t<count>;
  const Global<const T> x = arg<const T>(a, 0);
  const Global<const T> gamma = arg<const T>(a, 1), beta = arg<const T>(a, 2);
  const Global<const T> mean = arg<const T>(a, 3), var = arg<const T>(a, 4);
  const Global<T> y = arg<T>(a, 5);

  const auto channel = [](I i) -> int {
    return Cfg::CHANNELS_LAST ? int(i % Cfg::C) : int((i / Cfg::S) % Cfg::C);
  };
  const auto scale_of = [&](int c) {
    return to_float(gamma[c]) / sqrtf(to_float(var[c]) + Cfg::EPS);
  };
  const I stride = I(gridDim.x) * Cfg::THREADS;
  const I first = I(blockIdx.x) * Cfg::THREADS + I(threadIdx.x);
  if constexpr (Cfg::STAGE) {
    KILN_SHARED_ARRAY(float, scale, Cfg::C);
    KILN_SHARED_ARRAY(float, shift, Cfg::C);
    for (int c = int(threadIdx.x); c < Cfg::C; c += Cfg::THREADS) {
      const float s = scale_of(c);
      scale[c] = s;
      shift[c] = to_float(beta[c]) - to_float(mean[c]) * s;
    }
    sync_threads();
    for (I i = first; i < count; i += stride) {
      const int c = channel(i);
      const float sc = scale[c], sh = shift[c];
      float v = to_float(x[i]) * sc + sh;
      if (Cfg::RELU) v = v > 0.f ? v : 0.f;
      y[i] = from_float<T>(v);
    }
  } else {
    for (I i = first; i < count; i += stride) {
      const int c = channel(i);
      const float sc = scale_of(c);
      float v = (to_float(x[i]) - to_float(mean[c])) * sc + to_float(beta[c]);
      if (Cfg::RELU) v = v > 0.f ? v : 0.f;
      y[i] = from_float<T>(v);
    }
  }
}

} // namespace kiln::dense
