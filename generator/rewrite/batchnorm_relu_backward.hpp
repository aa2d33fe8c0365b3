// A training step's relu backward fused into the chunked batchnorm backward after it: where
// relu.backward(y, dy) -> dx and dx's only readers are a batchnorm.backward reading chunk sums
// (batchnorm_chunks.hpp) and its batchnorm.partials, both read dy masked by y instead
// (their `relu_y`: dy where y > 0, zero elsewhere, as dx was) and the relu's step goes, with
// its pass over three tensors (0.51 ms of resnet50 f16 b32's step on the H200 of 2026-11-28b,
// 49 launches) for one more read of y in each of the two batchnorm steps. The relu's y and dy
// stay alive until the batchnorm's steps: none may write them in between. Training plans,
// after the chunks and the forward fusions; not under a memory budget (the schedule planned
// the lifetimes).
#pragma once

#include "runtime/plan.hpp"

#include <string>
#include <vector>

namespace kiln {

// The fused batchnorm backwards' nodes ("layer1.0.bn1+layer1.0.relu1").
std::vector<std::string> fuse_relu_backwards_into_batchnorm(Plan& p);

} // namespace kiln
