#include "generator/select/epilogue.hpp"

#include "runtime/error.hpp"

#include <fmt/format.h>

namespace kiln {

std::string activation_tag(Activation a) {
  if (a == Activation::none) return "";
  std::string s = "_" + std::string(activation_name(a));
  // Parameters at f32's 9 digits, so distinct values never share a name.
  for (float p : activation_params(a)) {
    std::string n = fmt::format("{:.9g}", double(p));
    for (char& c : n)
      c = c == '.' ? 'p' : c == '-' ? 'm' : c;
    std::erase(n, '+');
    s += "_" + n;
  }
  return s;
}

void cfg_activation(Variant& v, Activation a) {
  if (a == Activation::none || a == Activation::relu) {
    cfg_bool(v, "RELU", a == Activation::relu);
    return;
  }
  cfg_enum(v, "ACT", "kiln::Act", std::string(activation_name(a)));
  const std::vector<float> p = activation_params(a);
  if (!p.empty()) { // the epilogue reads ACT_P0 and ACT_P1 (templates/common/epilogue.cuh)
    cfg_float(v, "ACT_P0", p[0]);
    cfg_float(v, "ACT_P1", p[1]);
  }
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
