// The implicit GEMM's main loop: a block's range of k tiles through a STAGES-deep
// shared-memory pipeline, STAGES - 1 tiles in flight (one cp.async group each) while one is
// multiplied; a k tile is waited for, then a barrier, then the next load goes into the stage
// freed last. Ends with every copy complete (the epilogue may reuse the shared memory).
#pragma once

#include "conv/igemm/load_fragments.cuh"
#include "conv/igemm/load_global.cuh"

namespace kiln::conv::igemm {

template <class Cfg>
KILN_FN void mainloop(const GlobalLoader<Cfg>& loader, const FragmentLoader<Cfg>& fragments,
                      int kt_first, int KT, float (&acc)[Geometry<Cfg>::MT][Geometry<Cfg>::NT][4]) {
  using G = Geometry<Cfg>;
  KILN_IGEMM_UNROLL
  for (int i = 0; i < G::MT; ++i) {
    KILN_IGEMM_UNROLL
    for (int j = 0; j < G::NT; ++j) {
      KILN_IGEMM_UNROLL
      for (int r = 0; r < 4; ++r)
        acc[i][j][r] = 0.0f;
    }
  }

  KILN_IGEMM_UNROLL
  for (int s = 0; s < G::STAGES - 1; ++s) {
    if (s < KT) loader.load(s, kt_first + s);
    cp_async_commit();
  }
  for (int kt = 0; kt < KT; ++kt) {
    cp_async_wait<G::STAGES - 2>();
    sync_threads();
    const int next = kt + G::STAGES - 1;
    if (next < KT) loader.load(next % G::STAGES, kt_first + next);
    cp_async_commit();

    const int stage = kt % G::STAGES;
    KILN_IGEMM_UNROLL
    for (int ks = 0; ks < G::WPR / 8; ++ks)
      fragments.multiply(stage, ks, acc);
  }
  cp_async_wait<0>();
}

} // namespace kiln::conv::igemm
