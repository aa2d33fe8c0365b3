// The conv group's template families (templates/conv/), seen from the generator.
#pragma once

#include "generator/select/family.hpp"

namespace kiln {

// conv/direct.cuh: conv2d.forward, NCHW or NHWC, any stride/padding/dilation/groups, fused
// bias + residual + relu epilogue; f32, f16, bf16 storage, fp32 math.
class ConvDirectFamily final : public Family {
public:
  std::string_view name() const override { return "conv2d_direct"; }
  std::vector<Variant> candidates(const StepInfo& s) const override;
};

// conv/depthwise.cuh: conv2d.forward with one filter per channel (groups == C == O), the
// patch staged once per block, weights in registers, lanes along y's fastest axis.
class ConvDepthwiseFamily final : public Family {
public:
  std::string_view name() const override { return "conv2d_depthwise"; }
  std::vector<Variant> candidates(const StepInfo& s) const override;
};

// conv/fold_bn.cuh: conv2d.fold_bn, w_out in OIHW or OHWI order.
class ConvFoldBnFamily final : public Family {
public:
  std::string_view name() const override { return "conv2d_fold_bn"; }
  std::vector<Variant> candidates(const StepInfo& s) const override;
};

// conv/backward_weight_mma.cuh: conv2d.backward_weight on tensor cores (NHWC x and dy, f16 or
// bf16, one group), writing dw or the slices of `partial` that partial.sum adds up.
class ConvBackwardWeightMmaFamily final : public Family {
public:
  std::string_view name() const override { return "conv2d_backward_weight_mma"; }
  std::vector<Variant> candidates(const StepInfo& s) const override;
};

// conv/flip_weight.cuh: conv2d.flip_weight, OIHW in, OIHW or the nhwc weight layout out.
class ConvFlipWeightFamily final : public Family {
public:
  std::string_view name() const override { return "conv2d_flip_weight"; }
  std::vector<Variant> candidates(const StepInfo& s) const override;
};

// conv/backward_data.cuh: conv2d.backward_data (NCHW or NHWC), a gather; accumulate option.
class ConvBackwardDataFamily final : public Family {
public:
  std::string_view name() const override { return "conv2d_backward_data"; }
  std::vector<Variant> candidates(const StepInfo& s) const override;
};

// conv/backward_weight.cuh: conv2d.backward_weight (NCHW), one block per dw tile reducing
// over N * OH * OW in a fixed order; accumulate option.
class ConvBackwardWeightFamily final : public Family {
public:
  std::string_view name() const override { return "conv2d_backward_weight"; }
  std::vector<Variant> candidates(const StepInfo& s) const override;
};

// conv/bias_backward.cuh: bias.backward of conv2d (dy NCHW) or linear (dy [N, K]).
class BiasBackwardFamily final : public Family {
public:
  std::string_view name() const override { return "bias_backward"; }
  std::vector<Variant> candidates(const StepInfo& s) const override;
};

} // namespace kiln
