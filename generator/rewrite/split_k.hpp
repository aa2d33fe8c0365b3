// Split-K (DESIGN.md 5.3): a conv or linear whose output is a few tiles but whose reduction
// is long (the folded models' small images with wide channels, their classifiers) leaves
// most SMs idle; split into S ranges of the reduction, S times the blocks each reduce a
// range into fp32 partial sums, and partial.sum adds them in order and applies the epilogue.
// Chosen per step where the cost model predicts the pair clearly faster than the best
// unsplit kernel.
#pragma once

#include "generator/gpu/gpu_desc.hpp"
#include "runtime/plan.hpp"

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace kiln {

struct SplitKDecision {
  std::string node;
  int64_t slices = 1;    // S of the split (the best one tried)
  double unsplit_us = 0; // the best unsplit kernel's estimate
  double split_us = 0;   // the split kernel's estimate plus partial.sum's
};

// Rewrites eligible steps of an inference plan (after layouts are applied, before kernels
// are assigned); returns the steps it chose to split.
std::vector<SplitKDecision> plan_split_k(Plan& p, const GpuDesc& g);

nlohmann::ordered_json split_k_json(const SplitKDecision& d);

} // namespace kiln
