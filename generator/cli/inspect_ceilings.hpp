// kiln inspect --gpu GPU (without --fold): the kernels kiln generate would choose for the
// model on that GPU, per layer, with the cost model's estimate, its limiter and ceilings
// (generator/cost/main_loop.hpp), and the FLOP-weighted static ceiling of the tensor-core
// kernels: what the manifest carries, without writing a directory.
#pragma once

#include "generator/gpu/gpu_desc.hpp"
#include "generator/model/model.hpp"

namespace kiln::cli {

// train: the training step's kernels (kiln generate --train) rather than inference's.
void print_ceilings(const Model& m, const GpuDesc& g, bool json, bool train = false);

} // namespace kiln::cli
