// A training step's activation fused into the chunked batchnorm forward before it: where a
// batchnorm.forward_train that reads chunk sums (batchnorm_chunks.hpp) writes y that only an
// activation's forward reads (relu: its backward reads its own output, the batchnorm's backward
// reads x), the batchnorm writes the activation's output through its epilogue and the
// activation's step goes, with the pass over y it made (0.68 ms of resnet50 f16 b32's step on
// the H100 of 2026-11-27c). An activation whose backward reads its input (hardswish, silu)
// keeps its step: y is read again. Likewise where y's only reader is an add of y and another
// tensor r whose sum only the activation reads (a resnet block's end, relu(bn3(x) + shortcut)):
// the batchnorm adds r in its epilogue (a "residual" argument) before the activation, and the
// add's step goes too (its pass over two tensors; 0.26 ms of adds and 0.19 of relus in
// resnet50 f16 b32's step on the H200 of 2026-11-28), where no step between the batchnorm and
// the add writes r (the downsample's batchnorm, planned after the main path's, fuses with the
// main path's y as r). Add's backward reads nothing of the forward. Training plans, after the
// chunks; not under a memory budget (the schedule planned y).
#pragma once

#include "runtime/plan.hpp"

#include <string>
#include <vector>

namespace kiln {

// The fused steps' nodes ("layer1.0.bn1+layer1.0.relu1", "layer1.0.downsample.1+layer1.0.add+
// layer1.0.relu3").
std::vector<std::string> fuse_batchnorm_activations(Plan& p);

} // namespace kiln
