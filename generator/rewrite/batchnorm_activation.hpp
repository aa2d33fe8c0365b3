// A training step's activation fused into the chunked batchnorm forward before it: where a
// batchnorm.forward_train that reads chunk sums (batchnorm_chunks.hpp) writes y that only an
// activation's forward reads (relu: its backward reads its own output, the batchnorm's backward
// reads x), the batchnorm writes the activation's output through its epilogue and the
// activation's step goes, with the pass over y it made (0.68 ms of resnet50 f16 b32's step on
// the H100 of 2026-11-27c). An activation whose backward reads its input (hardswish, silu)
// keeps its step: y is read again. Training plans, after the chunks; not under a memory
// budget (the schedule planned y).
#pragma once

#include "runtime/plan.hpp"

#include <string>
#include <vector>

namespace kiln {

// The fused steps' nodes ("layer1.0.bn1+layer1.0.relu1").
std::vector<std::string> fuse_batchnorm_activations(Plan& p);

} // namespace kiln
