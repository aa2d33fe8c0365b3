// A concat of many inputs (DenseNet's dense layers take up to 48) as several concat.forward
// steps of at most kConcatChunk inputs, each writing its channel slice of the output: one
// kernel takes at most 16 buffers.
#pragma once

#include "runtime/plan.hpp"

#include <vector>

namespace kiln {

inline constexpr int kConcatChunk = 8;

// `full` is a concat.forward step over x0..xN-1 and y; `channels[k]` is input k's channels.
std::vector<Step> concat_chunks(const Step& full, const std::vector<int64_t>& channels);

} // namespace kiln
