// A strided conv over few channels (a network's stem: 7x7 stride 2 over an image's 3
// channels) as a stride-1 conv over the space_to_depth of its input (DESIGN.md 5.1). With
// stride S and padding P = S A + f (0 <= f < S), tap r = S a + b of output row p reads x row
// S (p + a - A) + b - f: row b of block row p + a - A of x padded by f. So y = conv(z, w')
// with z = space_to_depth(x, S, padding f) (block row i, in-block position (b, b'), channel c
// -> channel (b S + b') C + c), w' = space_to_depth(w, S) (taps past K zero), kernel
// ceil(K / S), stride 1, padding A. The gather over 3 channels (K = 147: an implicit GEMM
// whose loads cannot be vectorised) becomes a GEMM with K = 16 ceil(K / S)^2 over 16
// channels (S S C padded with zeros to a multiple of 16) that the Hopper family's TMA loads
// feed; the H100 of 2026-11-27 timed resnet50's stem at 1.16 ms at batch 256 where cuDNN took
// 0.59 (bench/results/h100_2026-11-27b). z is written by one pass over the image; w' is
// parameter work (the prepare phase). Inference plans only (training would need w's gradient
// back from w''s), not under a schedule, where the cost model predicts it pays.
#pragma once

#include "generator/gpu/gpu_desc.hpp"
#include "runtime/plan.hpp"

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace kiln {

struct SpaceToDepthConv {
  // Buffers to append to the plan, in order (the steps number them from the plan's count
  // on): w' ("s2d:" + w's name: weight-like, select.cpp), then z.
  std::vector<Buffer> buffers;
  std::vector<Step> steps; // replacing the conv, in order: w', z, the conv
  int64_t kernel = 0;      // the new conv's (square)
  int64_t channels = 0;    // z's
};

// The rewrite of conv2d.forward step `s` (stride S >= 2 on both axes, S <= K, one group,
// dilation 1, symmetric padding, C S S <= 64, output rows reachable by the blocks); nullopt
// where it does not apply.
std::optional<SpaceToDepthConv> space_to_depth_conv(const Plan& p, const Step& s);

struct SpaceToDepthDecision {
  std::string node;
  double conv_us = 0;  // the strided conv's best estimate
  double after_us = 0; // space_to_depth of x and the stride-1 conv (w' is prepare work)
  int64_t kernel = 0, channels = 0;
};

std::vector<SpaceToDepthDecision> plan_space_to_depth_convs(Plan& p, const GpuDesc& g);

nlohmann::ordered_json space_to_depth_json(const SpaceToDepthDecision& d);

} // namespace kiln
