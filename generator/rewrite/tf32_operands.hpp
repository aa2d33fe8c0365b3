// tf32 operands rounded once (DESIGN.md 6). In an f32 inference plan, a conv whose kernel
// computes on tf32 tensor cores rounds each operand to tf32 (cvt.rna) per fragment
// (mma.sync) or per stage in shared memory (wgmma). Where every reader of a buffer is such a
// conv, its writer can round it instead, once, and the readers skip it:
// - weights written by a conversion or a batchnorm folding (which the prepare phase runs once
//   per weight load): the writer rounds (ROUND_TF32), the conv skips B's rounding (B_TF32);
// - activations written by a tensor-core conv's fused epilogue (the implicit GEMM's or the
//   Hopper family's, Y_TF32) and read only as x by such convs (A_TF32): the rounding moves
//   from every reader's main loop into the one writer's stores. With both operands rounded,
//   the Hopper kernel has no rounding pass at all.
// The values the convs multiply are the same bits as before; the plan marks such buffers
// (Buffer::tf32) and the cpu reference rounds them after their writer as the kernel does.
#pragma once

#include "generator/gpu/gpu_desc.hpp"
#include "runtime/plan.hpp"

namespace kiln {

struct Tf32Operands {
  int weights = 0;     // weight buffers rounded once, in the prepare phase
  int activations = 0; // activations rounded by their producer's epilogue
};

// After layouts are applied and the plan's steps are final, before kernels are assigned:
// marks the buffers above, read only by convs the cost model gives tf32 tensor-core kernels
// of a family that takes rounded operands. Training plans are left as they are (their weights
// change every step, their activations are read by the backward pass).
Tf32Operands round_tf32_operands(Plan& p, const GpuDesc& g);

} // namespace kiln
