// Split-K completed inside the implicit GEMM (SPLIT > 1 with SPLIT_REDUCE; plan functions
// conv2d.forward_split and linear.forward_split): one launch instead of the partial GEMM plus
// partial.sum, and the result bit-identical from run to run.
//
// The SPLIT blocks of one output tile each reduce their range of k (BlockTile), then:
//  1. store their fp32 sums as slice `split` of the workspace partial[s][m][o] (the layout
//     the two-step form's partial buffer has);
//  2. fence (their stores reach device scope before the ticket is taken), and one thread takes
//     a ticket: an integer atomicAdd on the tile's counter in tickets[] (integer sums do not
//     depend on the order; no float atomics anywhere);
//  3. the block that draws ticket SPLIT - 1 arrived last: every other slice is written. It
//     fences again (acquire), adds the SPLIT slices in the fixed order 0, 1, ..., SPLIT - 1,
//     its own from registers at its own position, so that the sum is the same whichever block
//     arrives last; applies the unsplit kernel's epilogue (store_output: bias, residual,
//     activation, y's type) and resets the counter to 0 for the next launch (a CUDA graph
//     replays the launch as it is, so nothing else re-zeroes it).
// The other blocks return after their ticket. No block ever waits for another: nothing assumes
// the tile's blocks are resident together, so any grid size and any block order is correct.
// The counters must be zero before the first launch (the plan's prepare phase fills them).
//
// Arguments: x, w, [b], [residual], y, partial (float [SPLIT][M][O]), tickets (int, one per
// output tile: at least TILES).
#pragma once

#include "conv/igemm/epilogue.cuh"

namespace kiln::conv::igemm {

template <class Cfg> struct SplitArgs {
  static_assert(!Cfg::GUARD && !Cfg::POOL && Cfg::SPLIT > 1,
                "the in-kernel split serves plain forwards of SPLIT > 1 ranges");
  static constexpr int kPartial = Geometry<Cfg>::kArgY + 1, kTickets = kPartial + 1;
};

template <class Cfg>
KILN_FN void split_reduce(const KernelArgs& args, const BlockTile<Cfg>& bt, const WarpTile<Cfg>& wt,
                          Accumulators<Cfg>& acc) {
  using G = Geometry<Cfg>;
  using I = typename G::I;
  using A = SplitArgs<Cfg>;
  constexpr int O = G::O;
  store_partial<Cfg>(args, bt, wt, acc, A::kPartial);
  thread_fence(); // release: this thread's slice is visible to any block that sees the ticket
  sync_threads(); // every thread's slice (and the main loop's last shared reads) done
  const Shared<int> ticket = dynamic_shared<int>();
  const I tile = I(blockIdx.x) % G::TILES;
  const Global<int> tickets = arg<int>(args, A::kTickets);
  if (thread_linear() == 0) ticket[0] = atomic_add(&tickets[tile], 1);
  sync_threads();
  const int drawn = ticket[0];
  if (drawn != G::SPLIT - 1) return; // the tile's last block completes it
  thread_fence();                    // acquire: the other slices, as their fences left them

  for_each_output_pair<Cfg>(bt, wt, [&](int i, int j, int h, I m, int o) {
    float v0 = 0.0f, v1 = 0.0f; // partial.sum's order: 0 + slice 0 + slice 1 + ...
    for (int s = 0; s < G::SPLIT; ++s) {
      if (s == bt.split) {
        v0 += acc[i][j][2 * h];
        v1 += acc[i][j][2 * h + 1];
        continue;
      }
      const I at = I(s) * G::M * O + m * O + o;
      if constexpr (O % 2 == 0) {
        const u64 p = arg<const u64>(args, A::kPartial)[at / 2];
        v0 += lo<float>(p);
        v1 += hi<float>(p);
      } else {
        const Global<const float> part = arg<const float>(args, A::kPartial);
        v0 += part[at];
        if (o + 1 < O) v1 += part[at + 1];
      }
    }
    acc[i][j][2 * h] = v0;
    acc[i][j][2 * h + 1] = v1;
  });
  store_output<Cfg>(args, bt, wt, acc);
  if (thread_linear() == 0) tickets[tile] = 0; // every block of the tile has drawn its ticket
}

} // namespace kiln::conv::igemm
