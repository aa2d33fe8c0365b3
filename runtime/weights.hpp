// Binding parameters to a plan: from a safetensors file by name (PyTorch state_dict
// names), or seeded. Also collecting parameter gradients after a training step.
#pragma once

#include "runtime/executor.hpp"
#include "runtime/plan.hpp"
#include "runtime/tensor.hpp"

#include <cstdint>
#include <map>
#include <string>

namespace kiln {

// Every parameter of the plan must be present with its shape (any float dtype, converted);
// a missing or extra tensor, or a shape mismatch, is a kiln::Error naming the tensor and
// `file`. PyTorch's `*.num_batches_tracked` bookkeeping tensors are ignored.
void bind_weights(Executor& ex, const Plan& plan, const std::map<std::string, Tensor>& weights,
                  const std::string& file);
void bind_seeded_weights(Executor& ex, const Plan& plan, uint64_t seed);

// Gradient of every trained parameter, by parameter name (zeros for parameters that do
// not reach the loss).
std::map<std::string, Tensor> collect_grads(Executor& ex, const Plan& plan);

} // namespace kiln
