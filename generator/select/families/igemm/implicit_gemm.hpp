// conv2d.forward as an implicit GEMM on tensor cores (templates/conv/implicit_gemm.cuh):
// NHWC activations, OHWI weights, f16/bf16 (fp32 accumulate) or f32 through tf32.
#pragma once

#include "generator/select/family.hpp"

namespace kiln {

// One block-tile configuration of the template (BK follows from the element type: a k tile
// is 64 bytes of each row).
struct IgemmTile {
  int bm, bn, wm, wn; // block tile, warps along M and N
  int stages;         // cp.async pipeline depth on sm_80+ (sm_75: 2, plain loads)
  int registers;      // per thread (ptxas, sm_90): with 16-byte loads of x
  int registers_ld;   // element loads of x (C not a multiple of 16 bytes); 0: not offered
  int registers_pre90 = 0, registers_ld_pre90 = 0; // sm_75/sm_80 (0: as on sm_90)
  bool spills_pre90 = false; // ptxas spills some sm_75/sm_80 instances even at 255
  // mma fragments in registers: 2 double-buffers them across k-steps (FRAG_BUFFERS), 1 where
  // the launch bound leaves no room for a second set.
  int frag_buffers = 2;
};

// The tiles offered on every GPU, largest first.
const std::vector<IgemmTile>& igemm_tiles();

class ImplicitGemmFamily final : public Family {
public:
  std::string_view name() const override { return "conv2d_implicit_gemm"; }
  std::vector<Variant> candidates(const StepInfo& s) const override;
};

} // namespace kiln
