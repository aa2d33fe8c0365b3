// Split-K (DESIGN.md 5.3): a conv or linear whose output is a few tiles but whose reduction
// is long (the folded models' small images with wide channels, their classifiers, a batch-1
// network's last stages) leaves most SMs idle; split into S ranges of the reduction, S times
// the blocks each reduce a range into fp32 partial sums, which are added in the order 0..S-1
// and completed by the epilogue in one of two forms:
//  - in the kernel (conv2d.forward_split, linear.forward_split): the last block of each output
//    tile adds the slices (conv/igemm/split_reduce.cuh); one launch, whose workspace is the
//    slices (a transient) and a counter per tile (zeroed once, in the prepare phase, and left
//    zero by every launch);
//  - in two steps: conv2d/linear.forward_partial, then partial.sum.
// The form and S are chosen per step where the cost model predicts the best of them clearly
// faster than the best unsplit kernel (the in-kernel form where they tie).
#pragma once

#include "generator/gpu/gpu_desc.hpp"
#include "runtime/plan.hpp"

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace kiln {

enum class SplitForm { in_kernel, two_step };

struct SplitKDecision {
  std::string node;
  SplitForm form = SplitForm::in_kernel;
  int64_t slices = 1;      // S of the split (the best one tried of the form chosen)
  double unsplit_us = 0;   // the best unsplit kernel's estimate
  double split_us = 0;     // the chosen form's estimate
  double in_kernel_us = 0; // the best in-kernel split's estimate (INFINITY: none served)
  double two_step_us = 0;  // the best split kernel's estimate plus partial.sum's
  int64_t in_kernel_slices = 0, two_step_slices = 0; // their S
};

// Rewrites eligible steps of an inference plan (after layouts are applied, before kernels
// are assigned); returns the steps it chose to split.
std::vector<SplitKDecision> plan_split_k(Plan& p, const GpuDesc& g);

nlohmann::ordered_json split_k_json(const SplitKDecision& d);

} // namespace kiln
