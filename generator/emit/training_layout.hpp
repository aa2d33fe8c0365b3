// The activation layout of a training plan: the one whose plan the cost model predicts
// faster. Channels-last lets the tensor-core convolutions serve the forward pass, but every
// other step of training must then run channels-last too (or pay a conversion), so unlike
// inference (layouts.cpp's share of convolution MACs) the whole step is priced both ways:
// each layout applied, its batchnorms chunked where that pays (not under a memory budget),
// kernels assigned; fewer cuDNN steps first (they have no estimate), then the lower sum of
// the launches' estimates.
#pragma once

#include "generator/gpu/gpu_desc.hpp"
#include "runtime/plan.hpp"

#include <string>

namespace kiln {

struct TrainingLayoutChoice {
  Layout layout = Layout::nchw;
  double nchw_us = 0, nhwc_us = 0; // the launches' estimates, summed (infinite: a step unserved)
  size_t nchw_library = 0, nhwc_library = 0; // steps no template serves (cuDNN calls)
};

TrainingLayoutChoice choose_training_layout(const Plan& p, const GpuDesc& g, bool budgeted);

} // namespace kiln
