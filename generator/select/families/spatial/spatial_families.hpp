// The spatial group's families: templates/pool/ and templates/spatial/ seen from the
// generator. Each serves the forward and backward functions of one op, in NCHW and NHWC,
// for f32, f16 and bf16 (fp32 arithmetic).
#pragma once

#include "generator/select/family.hpp"

namespace kiln {

// maxpool2d.forward (pool/pool2d.cuh) and maxpool2d.backward (pool/pool2d_backward.cuh:
// direct gather, or tiled with the windows' maxima in shared memory).
class MaxPool2dFamily final : public Family {
public:
  std::string_view name() const override { return "maxpool2d"; }
  std::vector<Variant> candidates(const StepInfo& s) const override;
};

// avgpool2d.forward and avgpool2d.backward (gather).
class AvgPool2dFamily final : public Family {
public:
  std::string_view name() const override { return "avgpool2d"; }
  std::vector<Variant> candidates(const StepInfo& s) const override;
};

// adaptive_avgpool2d.forward (direct, or a block-level reduction per output for large
// windows: global average pooling) and .backward (gather) (pool/adaptive_avgpool2d.cuh).
class AdaptiveAvgPool2dFamily final : public Family {
public:
  std::string_view name() const override { return "adaptive_avgpool2d"; }
  std::vector<Variant> candidates(const StepInfo& s) const override;
};

// resize.forward and .backward, nearest or bilinear, any scale or size (spatial/resize.cuh).
class ResizeFamily final : public Family {
public:
  std::string_view name() const override { return "resize"; }
  std::vector<Variant> candidates(const StepInfo& s) const override;
};

// pad.forward and .backward: constant, reflect or edge over H, W (spatial/pad.cuh).
class PadFamily final : public Family {
public:
  std::string_view name() const override { return "pad"; }
  std::vector<Variant> candidates(const StepInfo& s) const override;
};

// space_to_depth.forward and .backward, x and y each in the layout its buffer holds
// (spatial/space_to_depth.cuh).
class SpaceToDepthFamily final : public Family {
public:
  std::string_view name() const override { return "space_to_depth"; }
  std::vector<Variant> candidates(const StepInfo& s) const override;
};

// concat.forward (up to 15 inputs, channel axis, 4-D or 2-D) and concat.backward (a
// channel slice of dy) (spatial/concat.cuh).
class ConcatFamily final : public Family {
public:
  std::string_view name() const override { return "concat"; }
  std::vector<Variant> candidates(const StepInfo& s) const override;
};

} // namespace kiln
