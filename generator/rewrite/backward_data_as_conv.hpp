// A stride-1 convolution's data gradient as a forward convolution (DESIGN.md 5.1): dx =
// conv2d.forward(dy, flip(w)) with padding K-1-P, where flip (conv2d.flip_weight) turns each
// filter 180 degrees and swaps w's two channel axes. The forward families' kernels, tensor
// cores included, then serve what the gather of conv/backward_data.cuh computes on CUDA
// cores. Chosen per step where the cost model predicts the pair clearly faster; training
// plans only (they hold the steps), not under a memory budget (the flipped weights are not in
// the schedule's accounting), one group, dilation 1, symmetric padding at most K-1. A step
// that adds into dx (dx has several consumers) instead writes a new buffer with the old dx as
// the conv's residual, and the steps after it read the new one. A strided conv's dx is one
// such conv per phase, interleaved into dx (backward_data_phases.hpp).
#pragma once

#include "generator/gpu/gpu_desc.hpp"
#include "runtime/plan.hpp"

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace kiln {

struct BackwardDataConvDecision {
  std::string node;
  double gather_us = 0; // conv2d.backward_data's best estimate
  double conv_us = 0;   // conv2d.flip_weight's and the forward conv's, summed
  int phases = 0;       // a strided conv's phase convs (each copied into dx); 0: stride 1
};

std::vector<BackwardDataConvDecision> plan_backward_data_as_conv(Plan& p, const GpuDesc& g);

// A strided transposed conv (conv_transpose2d.forward: a UNet's upsampling) as a conv per
// phase, where that pays; in any plan (an inference plan's turned filters are parameter work,
// hoisted into the prepare phase).
std::vector<BackwardDataConvDecision> plan_transposed_conv_phases(Plan& p, const GpuDesc& g);

nlohmann::ordered_json backward_data_conv_json(const BackwardDataConvDecision& d);

} // namespace kiln
