// A weight gradient split over its positions (DESIGN.md 5.1): a conv's dw sums over every
// output position (N * OH * OW: 100k at resnet50 b32), while its tiles are few (a 64 x 64
// tile of a 64 -> 64 3x3 conv's dw: 9 tiles; the stem's 64 x 147 on CUDA cores: 19), so the
// tensor-core kernel (conv/backward_weight_mma.cuh) or the CUDA-core one
// (conv/backward_weight.cuh: a stem's C = 3, NCHW, f32) spreads the positions over S blocks
// per tile, each writing an fp32 slice of `partial` [S, *dw], and partial.sum adds the slices
// in order into dw
// (adding to it where the step accumulates). Chosen per step, with S, where the cost model
// predicts the pair clearly faster than the step alone; training plans only, not under a
// memory budget (the slices are not in the schedule's accounting).
#pragma once

#include "generator/gpu/gpu_desc.hpp"
#include "runtime/plan.hpp"

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace kiln {

struct BackwardWeightSplitDecision {
  std::string node;
  int64_t slices = 0;
  double one_step_us = 0; // the step's best estimate as it is
  double split_us = 0;    // the sliced step's and partial.sum's, summed
};

std::vector<BackwardWeightSplitDecision> plan_backward_weight_split(Plan& p, const GpuDesc& g);

nlohmann::ordered_json backward_weight_split_json(const BackwardWeightSplitDecision& d);

} // namespace kiln
