// Which steps the cuDNN runner computes: the generator's library fallback and its cuDNN-only
// plans (`--kernels cudnn`) ask here, so they never choose a step the runner would refuse.
#pragma once

#include "runtime/plan.hpp"

#include <string>

namespace kiln {

// "" when the cuDNN runner computes `s`; otherwise why not.
inline std::string cudnn_unsupported(const Step& s) {
  const Attrs& a = s.attrs;
  const bool symmetric = padding_end(a) == a.padding; // cuDNN pads both sides alike
  if (s.sparse.guard != Guard::none)
    return "guarded by a device-side nonzero count (cuDNN cannot test it)";
  if (s.epilogue.activation != Activation::none && s.epilogue.activation != Activation::relu)
    return std::string("activation ") + std::string(activation_name(s.epilogue.activation)) +
           " (the runner fuses relu only)";
  if (s.arg("values") >= 0) return "compacts its output (no cuDNN call does)";
  if (s.arg("gate") >= 0) return "a squeeze-excite gate on its input (no cuDNN call scales it)";
  switch (s.fn) {
  case Fn::conv2d_forward:
  case Fn::conv2d_backward_data:
  case Fn::conv2d_backward_weight: return symmetric ? "" : "asymmetric padding (a tile's border)";
  case Fn::maxpool2d_forward:
  case Fn::avgpool2d_forward:
    if (a.ceil_mode) return "ceil_mode pooling";
    return symmetric ? "" : "asymmetric padding (a tile's border)";
  case Fn::bias_backward:
  case Fn::relu_forward:
  case Fn::relu_backward:
  case Fn::softmax_forward:
  case Fn::softmax_backward:
  case Fn::batchnorm_forward:
  case Fn::add_forward:
  case Fn::copy:
  case Fn::convert: return "";
  default: return std::string(fn_name(s.fn)) + " has no cuDNN call";
  }
}

} // namespace kiln
