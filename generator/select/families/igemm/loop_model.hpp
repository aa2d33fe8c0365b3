// The implicit GEMM's main loop as the cost model sees it (cost/main_loop.hpp): shared-memory
// bytes, instructions and exposed latency per mma.sync, counted from the structure of
// templates/conv/igemm/mainloop.cuh, load_global.cuh and load_fragments.cuh.
#pragma once

#include "generator/cost/main_loop.hpp"
#include "generator/select/families/igemm/implicit_gemm.hpp"

namespace kiln {

// How a k tile of A reaches shared memory: 16-byte cp.async ("cp16"), or element loads
// packed into words and stored (x not a multiple of 16 bytes, or x NCHW).
struct IgemmLoopShape {
  IgemmTile tile;
  int elem_bytes = 2; // 2: f16/bf16 (mma k16), 4: f32 through tf32 (mma k8)
  int stages = 3;
  bool vec_a = true, vec_b = true;
  bool ldmatrix = true;
  bool b_tf32 = false; // tf32 weights arrive rounded: only A's registers are rounded
  bool gate = false;   // x scaled per (n, c) as it is loaded (a fused squeeze-excite gate)
  bool a_tf32 = false; // tf32 activations arrive rounded: A's registers are not rounded
};

MainLoop igemm_main_loop(const IgemmLoopShape& s);

} // namespace kiln
