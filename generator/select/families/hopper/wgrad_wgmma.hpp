// conv2d.backward_weight on Hopper (sm_90a): templates/conv/hopper/wgrad_wgmma.cuh, the
// forward family's TMA ring and warp specialisation on the GEMM dw = dy^T x over output
// positions, both operands MN-major (channels contiguous) for wgmma. Offered on sm_90
// descriptors for NHWC f16 / bf16 gradients it can run: groups 1, dilation 1, symmetric
// padding, C and O multiples of 64, writing dw (OIHW) or its fp32 slices over positions.
#pragma once

#include "generator/select/family.hpp"

#include <string>
#include <utility>
#include <vector>

namespace kiln {

class HopperWgradFamily final : public Family {
public:
  std::string_view name() const override { return "conv2d_backward_weight_hopper_wgmma"; }
  std::vector<Variant> candidates(const StepInfo& s) const override;
};

bool is_hopper_wgrad(const Variant& v);

// The maps an instance reads for step s, by argument role: x as SH * SW parity maps (flat:
// one [N*H*W][C] map), dy as [N][OH][OW][O] (flat: [N*OH*OW][O]); boxes of 64 channels by
// the tile's 64 positions.
std::vector<std::pair<std::string, TensorMapEncode>>
hopper_wgrad_maps(const Variant& v, const Plan& p, const Step& s);

} // namespace kiln
