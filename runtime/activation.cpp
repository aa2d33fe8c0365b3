#include "runtime/activation.hpp"

#include "runtime/error.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace kiln {

namespace {

// Each function takes the activation's two parameters (unused by most).
double identity(double v, double, double) { return v; }
double one(double, double, double) { return 1; }
double relu(double v, double, double) { return v > 0 || std::isnan(v) ? v : 0; }
double relu_grad(double v, double, double) { return v > 0 ? 1 : 0; }
// x * relu6(x + 3) / 6; torch.nn.functional.hardswish and its backward.
double hardswish(double v, double, double) { return v * std::min(std::max(v + 3, 0.0), 6.0) / 6; }
double hardswish_grad(double v, double, double) { return v < -3 ? 0 : v <= 3 ? v / 3 + 0.5 : 1; }
// torch.clamp's value (NaN stays NaN); the gradient of nn.ReLU6 / hardtanh: 1 strictly inside.
double clip(double v, double lo, double hi) { return v < lo ? lo : v > hi ? hi : v; }
double clip_grad(double v, double lo, double hi) { return v > lo && v < hi ? 1 : 0; }
// max(0, min(1, alpha * x + beta)); torch's hardsigmoid_backward: alpha strictly inside.
double hardsigmoid(double v, double a, double b) { return std::clamp(a * v + b, 0.0, 1.0); }
double hardsigmoid_grad(double v, double a, double b) {
  const double u = a * v + b;
  return u > 0 && u < 1 ? a : 0;
}
double sigm(double v) { return 1 / (1 + std::exp(-v)); }
double sigmoid(double v, double, double) { return sigm(v); }
double sigmoid_grad(double v, double, double) { return sigm(v) * (1 - sigm(v)); }
double silu(double v, double, double) { return v * sigm(v); }
double silu_grad(double v, double, double) { return sigm(v) * (1 + v * (1 - sigm(v))); }
// x * Phi(x) = x / 2 * (1 + erf(x / sqrt 2)); derivative Phi(x) + x * phi(x).
constexpr double kSqrtHalf = 0.70710678118654752440, kInvSqrt2Pi = 0.39894228040143267794;
double gelu(double v, double, double) { return 0.5 * v * (1 + std::erf(v * kSqrtHalf)); }
double gelu_grad(double v, double, double) {
  return 0.5 * (1 + std::erf(v * kSqrtHalf)) + v * kInvSqrt2Pi * std::exp(-0.5 * v * v);
}
// x / 2 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3))), PyTorch's approximate="tanh".
constexpr double kSqrt2OverPi = 0.79788456080286535588, kCubic = 0.044715;
double gelu_tanh(double v, double, double) {
  return 0.5 * v * (1 + std::tanh(kSqrt2OverPi * (v + kCubic * v * v * v)));
}
double gelu_tanh_grad(double v, double, double) {
  const double t = std::tanh(kSqrt2OverPi * (v + kCubic * v * v * v));
  return 0.5 * (1 + t) + 0.5 * v * (1 - t * t) * kSqrt2OverPi * (1 + 3 * kCubic * v * v);
}

struct Def {
  ActKind kind;
  std::string_view name;
  int params;
  double (*cpu)(double, double, double);
  double (*grad)(double, double, double);
};

constexpr Def defs[] = {
    {ActKind::none, "none", 0, identity, one},
    {ActKind::relu, "relu", 0, relu, relu_grad},
    {ActKind::hardswish, "hardswish", 0, hardswish, hardswish_grad},
    {ActKind::clip, "clip", 2, clip, clip_grad},
    {ActKind::hardsigmoid, "hardsigmoid", 2, hardsigmoid, hardsigmoid_grad},
    {ActKind::sigmoid, "sigmoid", 0, sigmoid, sigmoid_grad},
    {ActKind::silu, "silu", 0, silu, silu_grad},
    {ActKind::gelu, "gelu", 0, gelu, gelu_grad},
    {ActKind::gelu_tanh, "gelu_tanh", 0, gelu_tanh, gelu_tanh_grad},
};

static_assert(
    [] {
      for (size_t i = 0; i < std::size(defs); ++i)
        if (size_t(defs[i].kind) != i) return false;
      return true;
    }(),
    "defs lists every ActKind in enum order");

const Def& def(Activation a) { return defs[size_t(a.kind)]; }

std::string number(float f) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", double(f));
  return buf;
}

} // namespace

std::string_view activation_name(Activation a) { return def(a).name; }

std::optional<ActKind> parse_activation_kind(std::string_view name) {
  for (const Def& d : defs)
    if (d.name == name) return d.kind;
  return std::nullopt;
}

int activation_param_count(ActKind k) { return defs[size_t(k)].params; }

std::vector<float> activation_params(Activation a) {
  if (def(a).params == 0) return {};
  return {a.p0, a.p1};
}

Activation make_activation(ActKind k, const std::vector<double>& params) {
  const Def& d = defs[size_t(k)];
  if (int(params.size()) != d.params)
    throw Error(cat(d.name, " takes ", d.params, " parameter(s), got ", params.size()));
  Activation a{k};
  if (d.params == 0) return a;
  for (double p : params)
    if (!std::isfinite(p) || std::fabs(p) > 3.4e38)
      throw Error(cat(d.name, ": parameter ", p, " is not a finite f32"));
  a.p0 = float(params[0]);
  a.p1 = float(params[1]);
  if (k == ActKind::clip && a.p0 > a.p1)
    throw Error(cat("clip: min ", params[0], " exceeds max ", params[1]));
  return a;
}

std::string activation_label(Activation a) {
  std::string s(def(a).name);
  for (float p : activation_params(a))
    s += "_" + number(p);
  return s;
}

double activate(Activation a, double v) { return def(a).cpu(v, a.p0, a.p1); }
double activation_grad(Activation a, double v) { return def(a).grad(v, a.p0, a.p1); }

} // namespace kiln
