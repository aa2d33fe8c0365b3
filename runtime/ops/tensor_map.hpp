// tensor_map.encode's description (step_params.hpp's TensorMapEncode) as the TMA tensor map
// the backends write: kiln's KilnTensorMap (runtime/emu/tensor_map.h), which the emulator
// reads as it is and the cuda backend encodes through the driver.
#pragma once

#include "runtime/emu/tensor_map.h"
#include "runtime/plan.hpp"

#include <cstddef>
#include <string>

namespace kiln {

// "" when the description suits the plan (the buffer exists, has its dtype, holds every
// element the map reaches; the TMA's limits), else what is wrong.
std::string tensor_map_problem(const Plan& p, const TensorMapEncode& m);

// The map of step s (a tensor_map.encode) over an arena at `arena` (a host or a device
// address: only the sum is formed).
KilnTensorMap tensor_map_of(const Plan& p, const TensorMapEncode& m, const std::byte* arena);

} // namespace kiln
