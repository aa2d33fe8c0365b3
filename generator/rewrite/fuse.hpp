// Epilogue fusion for inference plans: conv2d [-> batchnorm] [-> add] [-> activation] becomes
// one conv2d.forward step (batchnorm folded into the weights by a conv2d.fold_bn step, the
// add as a residual, the activation — relu, hardswish: any function whose runtime definition
// names one — as the epilogue's); linear -> activation and batchnorm -> activation likewise.
// A link is fused only when the intermediate value has no other use.
#pragma once

#include "runtime/plan.hpp"

namespace kiln {

// Rewrites the forward phase of an unfinished inference plan; returns how many steps it removed.
int fuse_epilogues(Plan& p);

} // namespace kiln
