// The implicit GEMM's main loop: a block's range of k tiles through a STAGES-deep
// shared-memory pipeline, STAGES - 1 tiles in flight (one cp.async group each) while one is
// multiplied. Stages are addressed by word offset, carried from one k tile to the next (no
// modulo per load): `rd` holds tile kt, `wr` takes tile kt + STAGES - 1, the stage tile
// kt - 1 used.
//
// FRAG_BUFFERS == 2: the mma fragments are double-buffered in registers: k-step ks + 1's
// fragments load while ks's mmas run, and the next k tile's first ones while this tile's
// last mmas run, so shared-memory latency hides behind the tensor cores. Per k tile kt: the
// load of tile kt + STAGES - 1 is issued (every warp's last read of its stage came before
// the barrier that ended tile kt - 1); before the last k-step, tile kt + 1 is waited for and
// a barrier makes it visible, then its first fragments load.
// FRAG_BUFFERS == 1 (a tile whose registers leave no room for a second set): each k tile is
// waited for, then a barrier, then the next load is issued, then each k-step loads its
// fragments and multiplies.
//
// Each tile's wait is followed by the loader's scale_landed (GATE's scaling of the thread's
// own landed chunks) before the barrier.
// Both end with every copy complete (the epilogue may reuse the shared memory after its own
// barrier).
#pragma once

#include "conv/igemm/load_fragments.cuh"
#include "conv/igemm/load_global.cuh"

namespace kiln::conv::igemm {

template <class Cfg>
KILN_FN void mainloop(const GlobalLoader<Cfg>& loader, const FragmentLoader<Cfg>& fragments,
                      int kt_first, int KT, float (&acc)[Geometry<Cfg>::MT][Geometry<Cfg>::NT][4]) {
  using G = Geometry<Cfg>;
  constexpr int KS = G::KS, LAST = (G::STAGES - 1) * G::STAGE;
  static_assert(Cfg::FRAG_BUFFERS == 1 || Cfg::FRAG_BUFFERS == 2, "one or two fragment sets");
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
    if (s < KT) loader.load(s * G::STAGE, kt_first + s);
    cp_async_commit();
  }
  int rd = 0, wr = LAST;
  if constexpr (Cfg::FRAG_BUFFERS == 1) {
    for (int kt = 0; kt < KT; ++kt) {
      cp_async_wait<G::STAGES - 2>();
      loader.scale_landed(rd, kt_first + kt);
      sync_threads();
      if (kt + G::STAGES - 1 < KT) loader.load(wr, kt_first + kt + G::STAGES - 1);
      cp_async_commit();
      KILN_IGEMM_UNROLL
      for (int ks = 0; ks < KS; ++ks) {
        Fragments<Cfg> frag;
        fragments.load(rd, ks, frag);
        fragments.multiply(frag, acc);
      }
      wr = rd, rd = rd == LAST ? 0 : rd + G::STAGE;
    }
    cp_async_wait<0>();
    return;
  }
  Fragments<Cfg> frag[2];
  if (KT > 0) {
    cp_async_wait<G::STAGES - 2>();
    loader.scale_landed(0, kt_first);
    sync_threads();
    fragments.load(0, 0, frag[0]);
  }
  for (int kt = 0; kt < KT; ++kt) {
    if (kt + G::STAGES - 1 < KT) loader.load(wr, kt_first + kt + G::STAGES - 1);
    cp_async_commit();
    const int nx = rd == LAST ? 0 : rd + G::STAGE; // tile kt + 1's stage
    KILN_IGEMM_UNROLL
    for (int ks = 0; ks < KS; ++ks) {
      if (ks + 1 < KS) {
        fragments.load(rd, ks + 1, frag[(ks + 1) % 2]);
      } else if (kt + 1 < KT) {
        // Groups committed: STAGES - 1 + kt + 1; tile kt + 1's is the (kt + 2)th.
        cp_async_wait<G::STAGES - 2>();
        loader.scale_landed(nx, kt_first + kt + 1);
        sync_threads();
        fragments.load(nx, 0, frag[(ks + 1) % 2]);
      }
      fragments.multiply(frag[ks % 2], acc);
    }
    wr = rd, rd = nx;
  }
  cp_async_wait<0>();
}

} // namespace kiln::conv::igemm
