// The activations a fused epilogue applies (after the bias and the residual). One place per
// activation: its enum value, its name (plan.json, kernel names) and its CPU reference here;
// its device code in templates/.
#pragma once

#include <optional>
#include <string_view>

namespace kiln {

enum class Activation { none, relu, hardswish };

std::string_view activation_name(Activation a);
std::optional<Activation> parse_activation(std::string_view name);

// The CPU reference of one element. relu lets NaN through, as torch.relu does, so a broken
// value stays visible.
double activate(Activation a, double v);
// Its derivative at v (PyTorch's backward formulas, their choice at the kinks included).
double activation_grad(Activation a, double v);

} // namespace kiln
