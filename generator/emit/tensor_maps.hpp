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

// Step s as its layer is before kernel assignment: without the maps bound to it (what
// selection and the tuning key see; kiln bench and tune sweep from a finished plan).
Step without_tensor_maps(const Plan& p, const Step& s);

// Step s bound to the maps variant v reads instead of those of the kernel chosen for it
// (none where v is no Hopper kernel): their buffers and encode steps are added to p. A
// sweep checks and times each variant through it.
Step with_tensor_maps_of(Plan& p, const Step& s, const Variant& v);

} // namespace kiln
