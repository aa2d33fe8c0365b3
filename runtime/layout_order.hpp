// Host tensors are logical NCHW; a buffer in another layout holds the same elements in its
// own memory order. These reorder between the two (4-D tensors; others pass through).
#pragma once

#include "runtime/plan.hpp"
#include "runtime/tensor.hpp"

namespace kiln {

Tensor to_memory_order(const Tensor& logical, Layout layout);
Tensor to_logical_order(const Tensor& memory, Layout layout);

} // namespace kiln
