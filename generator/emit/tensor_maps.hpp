// The TMA tensor maps of the chosen Hopper kernels, in the plan (DESIGN.md 4.4): per map a
// 128-byte derived buffer, written by a tensor_map.encode step of the prepare phase (the
// arena's addresses are fixed once it is allocated, so a map is written once per binding)
// and bound to the kernel's step under the role its kernel argument names (xmap0.., wmap).
#pragma once

#include "generator/emit/assign_kernels.hpp"
#include "runtime/plan.hpp"

namespace kiln {

// Adds the maps every launch of a Hopper kernel reads; maps of the same memory and shape are
// written once. Runs after kernel assignment and the prepare phase's hoisting, before the
// plan is finished (laid out). Returns the number of encode steps added.
int insert_tensor_maps(Plan& p, const Assigned& assigned);

} // namespace kiln
