// The activation layout of a generated inference plan. Tensor-core convolutions want NHWC;
// switching layouts between neighbouring kernels costs a transpose each time, so the
// whole network runs in one layout: NHWC when the implicit-GEMM family serves most of the
// convolution work, NCHW otherwise. The model's inputs and outputs stay NCHW (the user's
// contract): the first convs read the input as it is, outputs are converted at the end, and
// so is a tensor before any flatten that needs NCHW order.
#pragma once

#include "generator/gpu/gpu_desc.hpp"
#include "runtime/plan.hpp"

namespace kiln {

// An inference plan's layout: NHWC where the implicit-GEMM family would serve most of the
// convolution MACs. A training plan's is priced whole (emit/training_layout.hpp).
Layout choose_layout(const Plan& p, const GpuDesc& g);
void apply_layout(Plan& p, Layout layout);

// A transient copy of `src` in `layout` made by a convert step inserted at `at` in `phase`;
// returns the new buffer.
int insert_convert(Plan& p, size_t phase, size_t at, int src, Layout layout, const std::string& name);

} // namespace kiln
