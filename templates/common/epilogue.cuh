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
// spelling: dense/gemm.cuh's BIAS) and the activation: ACT, or for none and relu the
// boolean RELU, the spelling instances had before ACT existed (their text stays as it was).
#pragma once

#include "common/kiln.cuh"

namespace kiln {

// The activations, as runtime/activation.hpp's Activation (same values and names: the
// generator writes ACT = kiln::Act::<its name>). Adding one: a value here and its Activation
// specialization below, beside its CPU reference in runtime/activation.cpp.
enum class Act : int { none = 0, relu = 1, hardswish = 2 };

template <Act A> struct Activation;
template <> struct Activation<Act::none> {
  static KILN_FN float apply(float v) { return v; }
};
template <> struct Activation<Act::relu> { // NaN -> 0, as the reference
  static KILN_FN float apply(float v) { return v > 0.f ? v : 0.f; }
};

// x * relu6(x + 3) / 6 (MobileNetV3); grad: its derivative, PyTorch's at the kinks.
template <> struct Activation<Act::hardswish> {
  static KILN_FN float apply(float v) { return v * fminf(fmaxf(v + 3.f, 0.f), 6.f) / 6.f; }
  static KILN_FN float grad(float v) { return v < -3.f ? 0.f : v <= 3.f ? v / 3.f + 0.5f : 1.f; }
};

template <Act A> KILN_FN float activate(float v) { return Activation<A>::apply(v); }

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

template <class T, bool BIAS, bool RESIDUAL, Act ACT> struct Epilogue {
  static constexpr bool has_bias = BIAS, has_residual = RESIDUAL;
  static constexpr Act act = ACT;

  // v plus bias b and residual r (each ignored where the epilogue has none), activated.
  static KILN_FN float apply(float v, float b, float r) {
    if constexpr (BIAS) v += b;
    if constexpr (RESIDUAL) v += r;
    return activate<ACT>(v);
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

// The epilogue of a Cfg spelled HAS_BIAS, HAS_RESIDUAL and RELU or ACT (the conv families').
template <class Cfg>
using epilogue_of = Epilogue<typename Cfg::T, Cfg::HAS_BIAS, Cfg::HAS_RESIDUAL, act_of<Cfg>::value>;

} // namespace kiln
