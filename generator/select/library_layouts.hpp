// What a cuDNN step needs: its legacy API computes only when every image tensor of a call
// (x, w, y and their gradients) has one format, so all take the layout of the image the step
// writes (the plan's activation layout); a network input read as NCHW by an NHWC plan's first
// conv is converted, and a weight's conversion moves to the prepare phase with the folding.
// Used by kernel assignment for library steps and by kiln bench/tune for the cuDNN peer.
#pragma once

#include "generator/select/variant.hpp"
#include "runtime/plan.hpp"

namespace kiln {

// The layouts a cuDNN call of step s takes: every 4-D image in the layout of the one it
// writes (a convert keeps its own: it is the layout change).
Variant library_layouts(const Plan& p, const Step& s);

} // namespace kiln
