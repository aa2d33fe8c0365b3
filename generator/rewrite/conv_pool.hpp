// Conv + max pool fusion (DESIGN.md 5.3): where a conv's output is read only by a max pool
// (the FoldedCNNs and NoScope models: conv, ReLU, pool), one kernel computes the conv over
// each pooled tile's footprint, applies its epilogue and pools in shared memory, so the
// conv's output never reaches memory. Chosen per conv where the cost model predicts the
// fused kernel clearly faster than the conv and the pool apart (overlapping windows
// recompute the conv at footprint borders).
#pragma once

#include "generator/gpu/gpu_desc.hpp"
#include "runtime/plan.hpp"

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace kiln {

struct ConvPoolDecision {
  std::string node;       // the fused step's node: "<conv>+<pool>"
  double separate_us = 0; // the conv's and the pool's best estimates
  double fused_us = 0;
};

// Rewrites the eligible pairs of an inference plan (after layouts and epilogue fusion,
// before kernels are assigned); returns the pairs it fused.
std::vector<ConvPoolDecision> plan_conv_pool(Plan& p, const GpuDesc& g);

nlohmann::ordered_json conv_pool_json(const ConvPoolDecision& d);

} // namespace kiln
