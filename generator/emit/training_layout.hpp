// The activation layout of a training plan: the one whose plan the cost model predicts
// faster; and the rewrites a training plan gets once its layout is applied. Channels-last lets the
// tensor-core convolutions serve the forward pass, but every other step of training must then run
// channels-last too (or pay a conversion), so unlike inference (layouts.cpp's share of convolution
// MACs) the whole step is priced both ways: each layout applied, the training rewrites below made,
// kernels assigned; fewer cuDNN steps first (they have no estimate), then the lower sum of the
// launches' estimates.
#pragma once

#include "generator/gpu/gpu_desc.hpp"
#include "generator/rewrite/backward_data_as_conv.hpp"
#include "generator/rewrite/backward_weight_split.hpp"
#include "generator/rewrite/batchnorm_activation.hpp"
#include "generator/rewrite/batchnorm_chunks.hpp"
#include "generator/rewrite/batchnorm_relu_backward.hpp"
#include "generator/rewrite/copy_forwarding.hpp"
#include "runtime/plan.hpp"

#include <string>

namespace kiln {

struct TrainingLayoutChoice {
  Layout layout = Layout::nchw;
  double nchw_us = 0, nhwc_us = 0; // the launches' estimates, summed (infinite: a step unserved)
  size_t nchw_library = 0,
         nhwc_library = 0; // steps no template serves (cuDNN calls; max: unserved)
};

TrainingLayoutChoice choose_training_layout(const Plan& p, const GpuDesc& g, bool budgeted);

// Channels-last batchnorms over chunks, stride-1 data gradients as forward convs and weight
// gradients split over their positions (on tensor cores), each where it pays, then copies
// whose readers can read their source; none under a memory budget (their workspaces and
// lifetimes are not in the schedule's accounting).
struct TrainingRewrites {
  std::vector<BatchnormChunksDecision> batchnorm_chunks;
  std::vector<std::string> batchnorm_activations; // fused into the chunked forwards
  std::vector<std::string> relu_backwards;        // fused into the chunked backwards
  std::vector<BackwardDataConvDecision> backward_data_convs;
  std::vector<BackwardWeightSplitDecision> backward_weight_splits;
  std::vector<ForwardedCopy> forwarded_copies; // after the others (rewrite/copy_forwarding.hpp)
};
TrainingRewrites apply_training_rewrites(Plan& p, const GpuDesc& g, bool budgeted);

} // namespace kiln
