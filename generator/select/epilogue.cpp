#include "generator/select/epilogue.hpp"

#include "runtime/error.hpp"

namespace kiln {

std::string activation_tag(Activation a) {
  return a == Activation::none ? "" : "_" + std::string(activation_name(a));
}

void cfg_activation(Variant& v, Activation a) {
  if (a == Activation::none || a == Activation::relu)
    cfg_bool(v, "RELU", a == Activation::relu);
  else
    cfg_enum(v, "ACT", "kiln::Act", std::string(activation_name(a)));
}

std::string KernelEpilogue::tag() const {
  return std::string(bias ? "_bias" : "") + (residual ? "_res" : "") + activation_tag(act);
}

void KernelEpilogue::cfg(Variant& v) const {
  cfg_bool(v, "HAS_BIAS", bias);
  cfg_bool(v, "HAS_RESIDUAL", residual);
  cfg_activation(v, act);
}

void KernelEpilogue::add_args(Variant& v) const {
  if (bias) v.args.push_back("b");
  if (residual) v.args.push_back("residual");
}

KernelEpilogue epilogue_of(const StepInfo& s) {
  return {s.has("b"), s.has("residual"), activation_of(s.step)};
}

} // namespace kiln
