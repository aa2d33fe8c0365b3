// Work that depends on the parameters alone moves out of the forward pass: batchnorm folded
// into a conv's weights (conv2d.fold_bn), weights converted to the layout a kernel reads,
// and whatever reads only their results. In an inference plan such steps form the
// `prepare` phase, which the executor runs once and again only after the parameters change;
// their outputs become persistent `derived` buffers (DESIGN.md 4.4).
#pragma once

#include "runtime/plan.hpp"

namespace kiln {

// Moves the forward phase's parameter-only steps into a prepare phase (inference plans; a
// training plan's parameters change every step). Before finish_plan. Returns how many moved.
int hoist_parameter_work(Plan& p);

} // namespace kiln
