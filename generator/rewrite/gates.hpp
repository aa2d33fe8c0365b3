// A squeeze-excite gate fused into the conv that reads the gated activation (DESIGN.md 5.3):
// mul(x, gate) with gate [N, C, 1, 1], read only by a conv as its x, becomes that conv with
// x and a "gate" argument, whose kernel scales x per (n, c) as it loads it
// (conv/igemm/load_global.cuh's GATE), so the gated activation never reaches memory: one
// launch and a write and a read of the activation fewer (mobilenet_v3, efficientnet, regnet_y).
// Chosen per conv where the cost model predicts the gated conv clearly faster than the mul
// and the conv apart (the gate costs the conv's main loop instructions and shared-memory
// traffic); only the families that read a gate serve the fused step (select.cpp).
#pragma once

#include "generator/gpu/gpu_desc.hpp"
#include "runtime/plan.hpp"

#include "generator/rewrite/fusion_decision.hpp"

#include <vector>

namespace kiln {

// node "<mul>+<conv>"; separate_us the mul's and the conv's, fused_us the gated conv's.
using GateDecision = FusionDecision;

// Rewrites the eligible pairs of an inference plan (after layouts, split-K and conv + pool
// fusion, before kernels are assigned); returns the pairs it fused.
std::vector<GateDecision> plan_gates(Plan& p, const GpuDesc& g);

} // namespace kiln
