#include "runtime/activation.hpp"

#include <cmath>

namespace kiln {

namespace {

double identity(double v) { return v; }
double relu(double v) { return v > 0 || std::isnan(v) ? v : 0; }

struct Def {
  Activation activation;
  std::string_view name;
  double (*cpu)(double);
};

constexpr Def defs[] = {
    {Activation::none, "none", identity},
    {Activation::relu, "relu", relu},
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

} // namespace kiln
