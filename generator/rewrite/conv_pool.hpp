// Conv + max pool fusion (DESIGN.md 5.3): where a conv's output is read only by a max pool
// (the FoldedCNNs and NoScope models: conv, ReLU, pool), one kernel computes the conv over
// each pooled tile's footprint, applies its epilogue and pools in shared memory, so the
// conv's output never reaches memory. Chosen per conv where the cost model predicts the
// fused kernel clearly faster than the conv and the pool apart (overlapping windows
// recompute the conv at footprint borders).
#pragma once

#include "generator/gpu/gpu_desc.hpp"
#include "runtime/plan.hpp"

#include "generator/rewrite/fusion_decision.hpp"

#include <vector>

namespace kiln {

// node "<conv>+<pool>"; separate_us the conv's and the pool's, fused_us the fused step's.
using ConvPoolDecision = FusionDecision;

// Rewrites the eligible pairs of an inference plan (after layouts and epilogue fusion,
// before kernels are assigned); returns the pairs it fused.
std::vector<ConvPoolDecision> plan_conv_pool(Plan& p, const GpuDesc& g);

} // namespace kiln
