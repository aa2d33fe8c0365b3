// Compaction of values a block has staged in shared memory into the compacted form of a
// sparse activation (runtime/sparse_form.hpp): what conv/sparse_compact.cuh does after
// staging a job, and what a conv's epilogue does with its output tile when it compacts its
// own output (no second pass over the tensor).
//
// The staged values are xs[r * PITCH + sl * CS + i]: ROWS pixels r, SLICES slices sl of CS
// channels i (zero where the tensor has no such channel). unit_of(r, sl) names the compacted
// unit (pixel * slices of the tensor + slice) the staged unit goes to, or -1 to skip it. SEG
// = min(CS, 32) lanes hold a unit's channels; a ballot marks the nonzeros, and each one's
// slot is the number of nonzero lanes below it, so nonzeros keep channel order and every
// output is written by exactly one thread: the result does not depend on timing.
#pragma once

#include "common/kiln.cuh"

namespace kiln::conv {

// Every thread of the block calls it (whole warps: ballots); returns the nonzeros of the
// units whose count this thread wrote.
template <int CS, int ROWS, int SLICES, int PITCH, int THREADS, class T, class UnitOf>
KILN_FN int compact_staged(Shared<float> xs, UnitOf unit_of, Global<T> values, Global<u8> index,
                           Global<u8> count) {
  constexpr int SEG = CS < 32 ? CS : 32; // lanes per unit
  constexpr int UPW = 32 / SEG;          // units a warp compacts at once
  constexpr int CHUNKS = CS / SEG;       // lane-widths per unit
  constexpr int WARPS = THREADS / 32, UNITS = ROWS * SLICES;
  static_assert(32 % SEG == 0 && CS % SEG == 0 && CS <= 255,
                "CS divides 32 or is a multiple of it");
  static_assert(THREADS % 32 == 0, "whole warps");
  const int lane = lane_id(), warp = warp_id();
  const int seg = lane / SEG, li = lane % SEG;
  const u32 seg_mask = SEG == 32 ? 0xffffffffu : ((1u << SEG) - 1u) << (seg * SEG);
  const u32 below = (1u << lane) - 1u; // the lanes under this one
  int counted = 0;
  for (int ub = warp * UPW; ub < UNITS; ub += WARPS * UPW) { // ub: the same in the whole warp
    const int u = ub + seg;
    const int r = u / SLICES, sl = u % SLICES;
    const i64 unit = u < UNITS ? i64(unit_of(r, sl)) : -1;
    int base = 0;
#pragma unroll
    for (int ch = 0; ch < CHUNKS; ++ch) {
      const int i = ch * SEG + li;
      const float v = unit >= 0 ? float(xs[r * PITCH + sl * CS + i]) : 0.f;
      const bool nz = v != 0.f; // NaN counts as nonzero: it propagates as it would dense
      const u32 m = ballot(nz) & seg_mask;
      if (nz) {
        const i64 at = unit * CS + base + __popc(m & below);
        values[at] = from_float<T>(v);
        index[at] = u8(i);
      }
      base += __popc(m);
    }
    if (li == 0 && unit >= 0) {
      count[unit] = u8(base);
      counted += base;
    }
  }
  return counted;
}

// Adds the block's nonzeros to the running total: an exact integer sum, one atomic per
// block. Every thread calls it; scratch holds THREADS / 32 ints.
template <int THREADS>
KILN_FN void add_block_count(int counted, Shared<int> scratch, Global<int> total) {
  for (int m = 16; m >= 1; m >>= 1)
    counted += shfl_xor(counted, m);
  if (lane_id() == 0) scratch[warp_id()] = counted;
  sync_threads();
  if (thread_linear() == 0) {
    int sum = 0;
    for (int w = 0; w < THREADS / 32; ++w)
      sum += scratch[w];
    if (sum) atomic_add(total.raw(), sum);
  }
}

} // namespace kiln::conv
