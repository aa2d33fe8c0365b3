// The TMA tensor maps of the chosen Hopper kernels, in the plan (DESIGN.md 4.4; the binding
// itself: select/families/hopper/tensor_map_binding.hpp).
#pragma once

#include "generator/emit/assign_kernels.hpp"
#include "runtime/plan.hpp"

namespace kiln {

// Adds the maps every launch of a Hopper kernel reads; maps of the same memory and shape are
// written once. Runs after kernel assignment and the prepare phase's hoisting, before the
// plan is finished (laid out). Returns the number of encode steps added.
int insert_tensor_maps(Plan& p, const Assigned& assigned);

} // namespace kiln
