// A strided convolution's data gradient as stride-1 forward convolutions, one per phase
// (DESIGN.md 5.1): the rows y of dx with y = S_H i + a (and columns x = S_W j + b) receive
// only the taps kh = r + t S_H, r = (a + P_H) mod S_H, from dy rows i + floor((a + P_H) /
// S_H) - t; so phase (a, b) of dx is conv2d.forward of dy with those taps turned
// (conv2d.flip_weight with FlipTaps), and region.copy with a step writes it into dx's rows a,
// a + S_H, ... (adding where the step adds). A phase no tap reaches (a 1x1 stride-2 conv's odd
// rows) is zero: dx is zero-filled first unless the step adds into it. The phases' convs do
// the gather's multiply-adds exactly, on the forward families' tensor-core kernels; each
// pads symmetrically (the Hopper family's im2col needs it), the copy skipping the extra rows.
#pragma once

#include "runtime/plan.hpp"

#include <optional>
#include <vector>

namespace kiln {

struct PhasedBackwardData {
  // Buffers to append to the plan, in order (the steps below number them from the plan's
  // count on): per phase its turned filters, then its output.
  std::vector<Buffer> buffers;
  std::vector<Step> steps; // replacing the backward_data step, in order
  int phases = 0;          // convs among them
};

// The decomposition of conv2d.backward_data step `s` of stride above 1, one group, dilation
// 1, into a plain dx (not a view, none viewing it); or of conv_transpose2d.forward (x as dy, y
// as dx, its bias in every phase conv: so not where some phase no tap reaches); nullopt
// where it does not apply.
std::optional<PhasedBackwardData> phased_backward_data(const Plan& p, const Step& s);

} // namespace kiln
