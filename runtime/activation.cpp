#include "runtime/activation.hpp"

#include <algorithm>
#include <cmath>

namespace kiln {

namespace {

double identity(double v) { return v; }
double one(double) { return 1; }
double relu(double v) { return v > 0 || std::isnan(v) ? v : 0; }
double relu_grad(double v) { return v > 0 ? 1 : 0; }
// x * relu6(x + 3) / 6; torch.nn.functional.hardswish and its backward.
double hardswish(double v) { return v * std::min(std::max(v + 3, 0.0), 6.0) / 6; }
double hardswish_grad(double v) { return v < -3 ? 0 : v <= 3 ? v / 3 + 0.5 : 1; }

struct Def {
  Activation activation;
  std::string_view name;
  double (*cpu)(double);
  double (*grad)(double);
};

constexpr Def defs[] = {
    {Activation::none, "none", identity, one},
    {Activation::relu, "relu", relu, relu_grad},
    {Activation::hardswish, "hardswish", hardswish, hardswish_grad},
};

static_assert(
    [] {
      for (size_t i = 0; i < std::size(defs); ++i)
        if (size_t(defs[i].activation) != i) return false;
      return true;
    }(),
    "defs lists every Activation in enum order");

} // namespace

std::string_view activation_name(Activation a) { return defs[size_t(a)].name; }

std::optional<Activation> parse_activation(std::string_view name) {
  for (const Def& d : defs)
    if (d.name == name) return d.activation;
  return std::nullopt;
}

double activate(Activation a, double v) { return defs[size_t(a)].cpu(v); }
double activation_grad(Activation a, double v) { return defs[size_t(a)].grad(v); }

} // namespace kiln
