// tf32 weights rounded once (DESIGN.md 6): in an f32 inference plan, a conv whose kernel will
// compute on tf32 tensor cores reads weights written by a conversion or a batchnorm folding
// (which the prepare phase runs once per weight load). Marking that buffer tf32 (Buffer::tf32)
// makes its writer round what it writes, and the conv's kernel skip rounding its weights per
// fragment (mma.sync) or per stage in shared memory (wgmma): the rounding is the same
// cvt.rna, done once instead of on every forward pass.
#pragma once

#include "generator/gpu/gpu_desc.hpp"
#include "runtime/plan.hpp"

namespace kiln {

// After layouts are applied and the plan's steps are final, before kernels are assigned:
// marks every weight buffer written by one convert or conv2d.fold_bn step and read only by
// convs the cost model gives tf32 tensor-core kernels. Returns how many it marked. Training
// plans are left as they are (their weights change every step).
int round_tf32_weights(Plan& p, const GpuDesc& g);

} // namespace kiln
