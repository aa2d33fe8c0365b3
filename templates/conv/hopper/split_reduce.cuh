// Split-K completed inside the Hopper conv (SPLIT > 1; plan functions conv2d.forward_split and
// linear.forward_split), as the mma.sync family's conv/igemm/split_reduce.cuh does it: one
// launch, no float atomics, the result bit-identical from run to run and the same as the
// two-step form's (forward_partial, then partial.sum).
//
// Each consumer warp completes its own 16 rows x BN of a tile (the epilogue is the warp's own
// too: epilogue.cuh), so no barrier of the block is involved. After the main loop of a work
// unit (tile, range s of k: geometry.cuh's unit_at) each consumer warp
//  1. stores its fp32 sums as slice s of partial[s][row][o] (the two-step form's layout), each
//     lane its fragments' pairs, fences (release) and syncs the warp;
//  2. takes a ticket, lane 0 an integer atomicAdd on its rows' counter (tile * WARPS + the
//     warp's index among the consumers'), shared with the lanes by a shuffle;
//  3. where it draws SPLIT - 1 it arrived last: every other slice of its rows is written. It
//     fences (acquire), adds the SPLIT slices in the fixed order 0, 1, ..., SPLIT - 1 (its own
//     from registers, in its place) into the accumulators, and the caller applies the unsplit
//     epilogue (store) and resets the counter for the next launch (a CUDA graph replays the
//     launch as it is).
// The other warps end at their ticket. No warp waits for another: any grid size and any order
// of the units is correct. The counters must be zero before the first launch (the plan's
// prepare phase fills them).
#pragma once

#include "conv/hopper/epilogue.cuh"

namespace kiln::hopper_conv {

// For each of this thread's accumulator pairs of consumer g's 64 rows that lie in the output:
// f(i, row, o), registers i and i + 1 being y's (row, o) and (row, o + 1) (fragment layout:
// hopper_cuda.cuh; as store_registers reads it).
template <class Cfg, class F> KILN_FN void for_each_acc_pair(int g, const Tile& tl, F&& f) {
  using G = Geometry<Cfg>;
  const int t = thread_linear() % 128, w = t / 32, lane = t % 32;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    i64 row;
    if (!row_of<Cfg>(tl, 64 * g + 16 * w + lane / 4 + 8 * h, row)) continue;
#pragma unroll // constant register indices: the accumulators stay in registers
    for (int c = 0; c < Cfg::BN / 8; ++c) {
      const int o = tl.o0 + 8 * c + 2 * (lane % 4);
      if (o < G::O) f(4 * c + 2 * h, row, o);
    }
  }
}

// The counter of this warp's rows (a warp of consumer warpgroup g) of `tile`: 4 * CONSUMERS a
// tile.
template <class Cfg> KILN_FN int counter_of(int tile, int g) {
  return (tile * Geometry<Cfg>::CONSUMERS + g) * 4 + (thread_linear() % 128) / 32;
}

// Steps 1-3 above for this warp's rows of consumer warpgroup g's in unit u (tile tl); true
// where this warp completes them, `acc` then holding the sum of all SPLIT slices.
template <class Cfg>
KILN_FN bool split_reduce(const KernelArgs& args, WgmmaAcc<Cfg::BN>& acc, int g, const Tile& tl,
                          const Unit& u) {
  using G = Geometry<Cfg>;
  constexpr bool kPairs = G::O % 2 == 0; // each pair one aligned 8-byte word
  const Global<float> partial = arg<float>(args, G::kArgPartial);
  const i64 slice = i64(G::ROWS) * G::O;
  for_each_acc_pair<Cfg>(g, tl, [&](int i, i64 row, int o) {
    const i64 at = u.split * slice + row * G::O + o;
    if constexpr (kPairs)
      view_as<Pack<float, 2>>(partial + at)[0] = Pack<float, 2>{{acc[i], acc[i + 1]}};
    else {
      partial[at] = acc[i];
      if (o + 1 < G::O) partial[at + 1] = acc[i + 1];
    }
  });
  thread_fence(); // release: this lane's slice is visible to any warp that sees the ticket
  sync_warp();    // every lane's stored and fenced
  const Global<int> tickets = arg<int>(args, G::kArgTickets);
  int drawn = 0;
  if (lane_id() == 0) drawn = atomic_add(&tickets[counter_of<Cfg>(u.tile, g)], 1);
  drawn = shfl_idx(drawn, 0);
  sync_warp(); // orders lane 0's atomic before every lane's reads (a shuffle moves registers only)
  if (drawn != G::SPLIT - 1) return false; // the rows' last warp completes them
  thread_fence();                          // acquire: the other slices, as their fences left them
  const Global<const float> part = arg<const float>(args, G::kArgPartial);
  for_each_acc_pair<Cfg>(g, tl, [&](int i, i64 row, int o) {
    float v0 = 0.0f, v1 = 0.0f; // partial.sum's order: 0 + slice 0 + slice 1 + ...
    for (int s = 0; s < G::SPLIT; ++s) {
      if (s == u.split) {
        v0 += acc[i];
        v1 += acc[i + 1];
        continue;
      }
      const i64 at = s * slice + row * G::O + o;
      if constexpr (kPairs) {
        const Pack<float, 2> p = view_as<const Pack<float, 2>>(part + at)[0];
        v0 += p.e[0];
        v1 += p.e[1];
      } else {
        v0 += part[at];
        if (o + 1 < G::O) v1 += part[at + 1];
      }
    }
    acc[i] = v0;
    acc[i + 1] = v1;
  });
  return true;
}

} // namespace kiln::hopper_conv
