// The activations a fused epilogue applies (after the bias and the residual). One place per
// activation: its kind, its name (plan.json, kernel names), its parameters and its CPU
// reference here; its device code in templates/common/epilogue.cuh (kiln::Act, same values).
// An activation is a value: its kind and up to two parameters (clip's bounds, hardsigmoid's
// alpha and beta), so a fused epilogue carries the parameters its standalone op had.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

enum class ActKind { none, relu, hardswish, clip, hardsigmoid, sigmoid, silu, gelu, gelu_tanh };

struct Activation {
  ActKind kind = ActKind::none;
  // The parameters, f32 as the kernels hold them: clip's min and max, hardsigmoid's alpha and
  // beta; 0 for the other kinds (so == compares activations).
  float p0 = 0, p1 = 0;

  static const Activation none, relu, hardswish, sigmoid, silu, gelu, gelu_tanh;
  static constexpr Activation clip(float min, float max) { return {ActKind::clip, min, max}; }
  static constexpr Activation hardsigmoid(float alpha, float beta) {
    return {ActKind::hardsigmoid, alpha, beta};
  }
  bool operator==(const Activation&) const = default;
};

inline constexpr Activation Activation::none{ActKind::none};
inline constexpr Activation Activation::relu{ActKind::relu};
inline constexpr Activation Activation::hardswish{ActKind::hardswish};
inline constexpr Activation Activation::sigmoid{ActKind::sigmoid};
inline constexpr Activation Activation::silu{ActKind::silu};
inline constexpr Activation Activation::gelu{ActKind::gelu};
inline constexpr Activation Activation::gelu_tanh{ActKind::gelu_tanh};

// The kind's name ("clip"): plan.json's "activation", the template's kiln::Act::<name>.
std::string_view activation_name(Activation a);
std::optional<ActKind> parse_activation_kind(std::string_view name);
// How many parameters the kind takes (0, or 2 for clip and hardsigmoid).
int activation_param_count(ActKind k);
// The parameters, as many as the kind takes.
std::vector<float> activation_params(Activation a);
// The kind and its parameters; throws kiln::Error (no place) on a wrong count or a clip whose
// min exceeds its max.
Activation make_activation(ActKind k, const std::vector<double>& params);
// For kernel names and messages: "relu", "clip_0_6", "hardsigmoid_0.2_0.5" ('.' and '-' kept).
std::string activation_label(Activation a);

// The CPU reference of one element. relu and clip let NaN through, as torch does, so a
// broken value stays visible.
double activate(Activation a, double v);
// Its derivative at v (PyTorch's backward formulas, their choice at the kinks included).
double activation_grad(Activation a, double v);

} // namespace kiln
