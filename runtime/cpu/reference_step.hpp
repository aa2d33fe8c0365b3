// Computes one plan step with the reference ops on buffers in host memory: the cpu
// backend's whole work, and the emu backend's for library steps.
#pragma once

#include "runtime/plan.hpp"

#include <cstddef>

namespace kiln::cpu {

// `arena` holds the plan's buffers at their offsets. Computes in double when an argument
// is f64, else in float (f16, bf16 and nhwc buffers are staged through float copies).
void run_reference_step(const Plan& plan, const Step& step, std::byte* arena);

} // namespace kiln::cpu
