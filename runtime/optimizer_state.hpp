// The optimizer state of a training plan (BufferRole::optimizer_state): SGD's velocities and
// Adam's moments, which persist from one training step to the next, and the step count the
// host writes before each update (kOptimizerStepBuffer). The arena starts undefined, so a
// training run zeroes the state or restores it from a checkpoint before its first update.
#pragma once

#include "runtime/executor.hpp"
#include "runtime/plan.hpp"
#include "runtime/tensor.hpp"

#include <map>
#include <string>

namespace kiln {

// Every state buffer zeroed (the step count too): the state before the first update.
void zero_optimizer_state(Executor& ex, const Plan& plan);

// The state tensors by buffer name ("opt.m:conv1.weight"), the step count excluded.
std::map<std::string, Tensor> read_optimizer_state(Executor& ex, const Plan& plan);

// Restores what read_optimizer_state returned; a missing or extra tensor, or one of another
// shape, is a kiln::Error naming it and `file`.
void write_optimizer_state(Executor& ex, const Plan& plan,
                           const std::map<std::string, Tensor>& state, const std::string& file);

// Writes the count (from 1) of the update the next update phase applies; plans without a
// step count (plain SGD, SGD with momentum) ignore it. Throws for counts outside [1, 2^31).
void set_optimizer_step(Executor& ex, const Plan& plan, int64_t step);

} // namespace kiln
