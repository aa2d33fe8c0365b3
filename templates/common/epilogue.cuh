// The fused epilogue every forward family applies to an accumulated value v of output
// channel c, in this order:
//   v = v * scale[c] + shift[c]   batchnorm (inference) as a per-channel scale and shift
//   v += bias[c]                  when the step has a bias
//   v += residual[at]             when it adds a residual (the element of y it writes)
//   v = act(v)                    the activation (Act)
// Families load bias and residual as suits their stores (one element, or an aligned pair)
// and call Epilogue<...>::apply for the arithmetic, so every family computes the same thing.
//
// An instance's Cfg names its epilogue as HAS_BIAS, HAS_RESIDUAL (or the family's own
// spelling: dense/gemm.cuh's BIAS) and the activation: ACT (with ACT_P0, ACT_P1 when it has
// parameters), or for none and relu the boolean RELU, the spelling instances had before ACT
// existed (their text stays as it was).
#pragma once

#include "common/kiln.cuh"

namespace kiln {

// The activations, as runtime/activation.hpp's ActKind (same values and names: the
// generator writes ACT = kiln::Act::<its name>). Adding one: a value here and its Activation
// specialization below, beside its CPU reference in runtime/activation.cpp. An activation
// with parameters (clip's min and max, hardsigmoid's alpha and beta) reads them as p0 and p1,
// which a Cfg gives as ACT_P0 and ACT_P1.
enum class Act : int {
  none = 0,
  relu = 1,
  hardswish = 2,
  clip = 3,
  hardsigmoid = 4,
  sigmoid = 5,
  silu = 6,
  gelu = 7,
  gelu_tanh = 8
};

template <Act A> struct Activation;
template <> struct Activation<Act::none> {
  static KILN_FN float apply(float v, float, float) { return v; }
};
template <> struct Activation<Act::relu> { // NaN -> 0, as the reference
  static KILN_FN float apply(float v, float, float) { return v > 0.f ? v : 0.f; }
};

// x * relu6(x + 3) / 6 (MobileNetV3); grad: its derivative, PyTorch's at the kinks.
template <> struct Activation<Act::hardswish> {
  static KILN_FN float apply(float v, float, float) {
    return v * fminf(fmaxf(v + 3.f, 0.f), 6.f) / 6.f;
  }
  static KILN_FN float grad(float v, float, float) {
    return v < -3.f ? 0.f : v <= 3.f ? v / 3.f + 0.5f : 1.f;
  }
};

// min(max(v, lo), hi), NaN kept (ReLU6: clip(0, 6)); grad: 1 strictly inside (hardtanh's).
template <> struct Activation<Act::clip> {
  static KILN_FN float apply(float v, float lo, float hi) { return v < lo ? lo : v > hi ? hi : v; }
  static KILN_FN float grad(float v, float lo, float hi) { return v > lo && v < hi ? 1.f : 0.f; }
};

// max(0, min(1, alpha * v + beta)); grad: alpha strictly inside.
template <> struct Activation<Act::hardsigmoid> {
  static KILN_FN float apply(float v, float a, float b) {
    return fminf(fmaxf(a * v + b, 0.f), 1.f);
  }
  static KILN_FN float grad(float v, float a, float b) {
    const float u = a * v + b;
    return u > 0.f && u < 1.f ? a : 0.f;
  }
};

KILN_FN float sigmoidf(float v) { return 1.f / (1.f + expf(-v)); }

template <> struct Activation<Act::sigmoid> {
  static KILN_FN float apply(float v, float, float) { return sigmoidf(v); }
  static KILN_FN float grad(float v, float, float) {
    const float s = sigmoidf(v);
    return s * (1.f - s);
  }
};

// v * sigmoid(v) (SiLU, swish).
template <> struct Activation<Act::silu> {
  static KILN_FN float apply(float v, float, float) { return v * sigmoidf(v); }
  static KILN_FN float grad(float v, float, float) {
    const float s = sigmoidf(v);
    return s * (1.f + v * (1.f - s));
  }
};

// v * Phi(v) = v / 2 * (1 + erf(v / sqrt 2)); grad Phi(v) + v * phi(v).
template <> struct Activation<Act::gelu> {
  static KILN_FN float apply(float v, float, float) {
    return 0.5f * v * (1.f + erff(v * 0.70710678118654752f));
  }
  static KILN_FN float grad(float v, float, float) {
    return 0.5f * (1.f + erff(v * 0.70710678118654752f)) +
           v * 0.39894228040143268f * expf(-0.5f * v * v);
  }
};

// v / 2 * (1 + tanh(sqrt(2 / pi) * (v + 0.044715 v^3))), PyTorch's approximate="tanh".
template <> struct Activation<Act::gelu_tanh> {
  static KILN_FN float apply(float v, float, float) {
    return 0.5f * v * (1.f + tanhf(0.79788456080286536f * (v + 0.044715f * v * v * v)));
  }
  static KILN_FN float grad(float v, float, float) {
    const float t = tanhf(0.79788456080286536f * (v + 0.044715f * v * v * v));
    return 0.5f * (1.f + t) +
           0.5f * v * (1.f - t * t) * 0.79788456080286536f * (1.f + 3.f * 0.044715f * v * v);
  }
};

// An activation's parameters as compile-time constants: none (0, 0), or a Cfg's ACT_P0/ACT_P1.
struct NoActParams {
  static constexpr float p0 = 0.f, p1 = 0.f;
};
template <class Cfg, class = void> struct act_params_of : NoActParams {};
template <class Cfg> struct act_params_of<Cfg, decltype(void(Cfg::ACT_P0))> {
  static constexpr float p0 = Cfg::ACT_P0, p1 = Cfg::ACT_P1;
};

template <Act A, class P = NoActParams> KILN_FN float activate(float v) {
  return Activation<A>::apply(v, P::p0, P::p1);
}

// The activation a Cfg configures: its ACT, else relu or none by its RELU.
template <class Cfg, class = void> struct act_of {
  static constexpr Act value = Cfg::RELU ? Act::relu : Act::none;
};
template <class Cfg> struct act_of<Cfg, decltype(void(Cfg::ACT))> {
  static constexpr Act value = Cfg::ACT;
};

// Batchnorm (inference) folded into one multiply-add per element.
struct ScaleShift {
  float scale, shift;
};
// scale = gamma / sqrt(var + eps), shift = beta - mean * scale, of channel c.
template <class T>
KILN_FN ScaleShift batchnorm_scale_shift(Global<const T> gamma, Global<const T> beta,
                                         Global<const T> mean, Global<const T> var, float eps,
                                         int c) {
  const float s = to_float(gamma[c]) / sqrtf(to_float(var[c]) + eps);
  return ScaleShift{s, to_float(beta[c]) - to_float(mean[c]) * s};
}

template <class T, bool BIAS, bool RESIDUAL, Act ACT, class P = NoActParams,
          bool ROUND_TF32 = false>
struct Epilogue {
  static constexpr bool has_bias = BIAS, has_residual = RESIDUAL;
  static constexpr Act act = ACT;
  static_assert(!ROUND_TF32 || sizeof(T) == 4, "tf32 rounding of a float output");

  // v plus bias b and residual r (each ignored where the epilogue has none), activated
  // (ROUND_TF32: then rounded to tf32, as its tf32 readers would round it).
  static KILN_FN float apply(float v, float b, float r) {
    if constexpr (BIAS) v += b;
    if constexpr (RESIDUAL) v += r;
    if constexpr (ROUND_TF32) return __uint_as_float(float_to_tf32(activate<ACT, P>(v)));
    return activate<ACT, P>(v);
  }
  // The same after a batchnorm's scale and shift.
  static KILN_FN float apply(float v, ScaleShift bn, float b, float r) {
    return apply(v * bn.scale + bn.shift, b, r);
  }
  // The same with b = bias[c] and r = residual[at] read from kernel arguments kB and kR
  // (any index where the epilogue has none).
  template <class I>
  static KILN_FN float apply(const KernelArgs& a, int kB, int kR, float v, int c, I at) {
    float b = 0.f, r = 0.f;
    if constexpr (BIAS) b = to_float(arg<const T>(a, kB)[c]);
    if constexpr (RESIDUAL) r = to_float(arg<const T>(a, kR)[at]);
    return apply(v, b, r);
  }
};

// The epilogue of a Cfg spelled HAS_BIAS, HAS_RESIDUAL and RELU or ACT (the conv families'),
// and Y_TF32 where it rounds its output.
template <class Cfg>
using epilogue_of = Epilogue<typename Cfg::T, Cfg::HAS_BIAS, Cfg::HAS_RESIDUAL, act_of<Cfg>::value,
                             act_params_of<Cfg>, y_tf32_of<Cfg>::value>;

} // namespace kiln
