// conv2d.forward on Hopper (sm_90a): templates/conv/hopper/igemm_wgmma.cuh, TMA loads into
// an mbarrier ring, a producer warpgroup and one or two wgmma consumer warpgroups. Offered on
// sm_90 descriptors (h100, h200) for NHWC convolutions it can run: groups 1, dilation 1,
// symmetric padding, C * sizeof(T) a multiple of 128 bytes, f16/bf16, f32 as tf32; and for
// linear.forward (a 1x1 conv over 1x1 images) on flat tiles, which 1x1 stride-1 unpadded convs
// also get (a tile is consecutive rows of the GEMM).
#pragma once

#include "generator/select/family.hpp"

#include <string>
#include <utility>
#include <vector>

namespace kiln {

class HopperConvFamily final : public Family {
public:
  std::string_view name() const override { return "conv2d_hopper_wgmma"; }
  std::vector<Variant> candidates(const StepInfo& s) const override;
};

// Whether v is an instance of a Hopper conv family, this one or the weight gradient's
// (wgrad_wgmma.hpp): its kernels read tensor maps and compile for sm_90a.
bool is_hopper_conv(const Variant& v);

// The architecture v compiles for on a GPU of `gpu_arch`: sm_90a for the Hopper families (wgmma and
// setmaxnreg exist only there, not on plain sm_90), the GPU's for every other.
std::string instance_arch(const Variant& v, const std::string& gpu_arch);

// The tensor maps an instance reads for step s, by argument role (the weight gradient's:
// hopper_wgrad_maps). This family's (xmap0.., wmap), as tensor_map.encode describes them: x as SH *
// SW maps (one per row/column parity, the template's comment; flat tiles: one 2-D map [N*H*W][C]),
// w as [O][KH*KW*C]; boxes of one swizzle row of channels (SWIZZLE bytes, 128 where the instance
// does not say).
std::vector<std::pair<std::string, TensorMapEncode>> hopper_conv_maps(const Variant& v,
                                                                      const Plan& p, const Step& s);

} // namespace kiln
