// The fused epilogue of the forward families (templates/common/epilogue.cuh) seen from the
// generator: which parts a step asks for, and how an instance spells them.
#pragma once

#include "generator/select/family.hpp"
#include "runtime/activation.hpp"

#include <string>
#include <string_view>

namespace kiln {

// The activations are runtime's (runtime/activation.hpp), named as templates/common/
// epilogue.cuh's kiln::Act names them.

// The step's fused activation.
inline Activation activation_of(const Step& s) { return s.epilogue.activation; }
// "_relu" for relu, "" for none.
std::string activation_tag(Activation a);
// The Cfg constant of an activation: none and relu as the boolean RELU (the spelling their
// instances had before kiln::Act, so their text stays), every other as ACT = kiln::Act::<name>.
void cfg_activation(Variant& v, Activation a);

struct KernelEpilogue {
  bool bias = false, residual = false;
  Activation act = Activation::none;

  // The instance-name part: "_bias", "_res" and the activation's tag, for what is there.
  std::string tag() const;
  // The Cfg constants HAS_BIAS, HAS_RESIDUAL and the activation, in that order.
  void cfg(Variant& v) const;
  // The argument roles it reads, in kernel order: b, residual (those present).
  void add_args(Variant& v) const;
};

// What a forward step asks for: a bias where it has a "b" argument, a residual where it has
// a "residual", and its activation.
KernelEpilogue epilogue_of(const StepInfo& s);

} // namespace kiln
