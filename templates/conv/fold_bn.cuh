// Batchnorm (inference) folded into the convolution before it (conv2d.fold_bn): with
// s = gamma / sqrt(running_var + eps) per output channel, w_out = w * s and
// b_out = (b - running_mean) * s + beta (b = 0 when the convolution has no bias).
//
// Cfg: T (element type of every argument), O, I (input channels per group), KH, KW,
//      OUT_NHWC (w_out stored [O][KH][KW][I], the nhwc layout of a weight; false: OIHW like w),
//      HAS_BIAS, EPS (the batchnorm's epsilon), THREADS, ROUND_TF32 (a float w_out rounded to
//      tf32: weights that tf32 tensor-core kernels then read without rounding them again).
// Arguments, in order: w, [b], weight, bias, running_mean, running_var, w_out, b_out.
// Grid: any; one thread per w_out element in w_out's memory order (grid-stride loop), and
// the first O of them also write b_out.
#pragma once

#include "common/kiln.cuh"

namespace kiln::conv {

template <class Cfg> KILN_FN float bn_scale(const KernelArgs& a, int o) {
  constexpr int kB = Cfg::HAS_BIAS ? 1 : 0;
  const float gamma = to_float(arg<const typename Cfg::T>(a, kB + 1)[o]);
  const float var = to_float(arg<const typename Cfg::T>(a, kB + 4)[o]);
  return gamma / sqrtf(var + Cfg::EPS);
}

template <class Cfg> KILN_FN void fold_bn(const KernelArgs& a) {
  using T = typename Cfg::T;
  constexpr int KK = Cfg::KH * Cfg::KW, I = Cfg::I;
  constexpr i64 count = i64(Cfg::O) * I * KK;
  constexpr int kB = Cfg::HAS_BIAS ? 1 : 0;
  const Global<const T> w = arg<const T>(a, 0);
  const Global<T> w_out = arg<T>(a, kB + 5);
  const i64 stride = i64(gridDim.x) * Cfg::THREADS;
  const i64 first = i64(blockIdx.x) * Cfg::THREADS + threadIdx.x;
  for (i64 e = first; e < count; e += stride) {
    int o;
    i64 from; // the element of w (OIHW) that w_out's element e holds
    if (Cfg::OUT_NHWC) {
      const int c = int(e % I), k = int((e / I) % KK);
      o = int(e / (i64(I) * KK));
      from = (i64(o) * I + c) * KK + k;
    } else {
      o = int(e / (i64(I) * KK));
      from = e;
    }
    const float v = to_float(w[from]) * bn_scale<Cfg>(a, o);
    w_out[e] = from_float<T>(Cfg::ROUND_TF32 ? __uint_as_float(float_to_tf32(v)) : v);
  }
  for (i64 o = first; o < Cfg::O; o += stride) {
    const float b = Cfg::HAS_BIAS ? to_float(arg<const T>(a, 1)[o]) : 0.f;
    const float beta = to_float(arg<const T>(a, kB + 2)[o]);
    const float mean = to_float(arg<const T>(a, kB + 3)[o]);
    arg<T>(a, kB + 6)[o] = from_float<T>((b - mean) * bn_scale<Cfg>(a, int(o)) + beta);
  }
}

} // namespace kiln::conv
