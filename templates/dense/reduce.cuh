// Deterministic reductions for the dense templates: every result is computed in a fixed
// order that depends only on the launch configuration, never on timing, so a kernel gives
// bit-identical results run to run (no floating-point atomics anywhere).
//
//  - warp_sum / warp_max: xor butterflies; every lane ends with the same value (each step
//    adds the same two operands in every lane, and float addition is commutative).
//  - block_sum / block_sums: warp butterflies, then every thread adds the per-warp results
//    in warp order. THREADS must be a multiple of 32 and every thread must call them.
//  - column_sum / column_sums: for a block laid out as ROWS x COLS threads (thread t is
//    column t % COLS, row t / COLS), the sum over the rows of each column, added in row
//    order; every thread of a column gets its column's total.
// Each block-wide function ends with a barrier, so its scratch array may be reused at once.
#pragma once

#include "common/kiln.cuh"

namespace kiln::dense {

KILN_FN float warp_sum(float v) {
  for (int m = 16; m >= 1; m >>= 1)
    v += shfl_xor(v, m);
  return v;
}

KILN_FN float warp_max(float v) {
  for (int m = 16; m >= 1; m >>= 1)
    v = fmaxf(v, shfl_xor(v, m));
  return v;
}

// scratch: THREADS / 32 floats.
template <int THREADS> KILN_FN float block_sum(float v, Shared<float> scratch) {
  static_assert(THREADS % 32 == 0, "block_sum needs whole warps");
  v = warp_sum(v);
  if (THREADS == 32) return v;
  if (lane_id() == 0) scratch[warp_id()] = v;
  sync_threads();
  float s = 0.f;
  for (int w = 0; w < THREADS / 32; ++w)
    s += scratch[w];
  sync_threads();
  return s;
}

// NV sums at once. scratch: NV * THREADS / 32 floats.
template <int THREADS, int NV> KILN_FN void block_sums(float (&v)[NV], Shared<float> scratch) {
  static_assert(THREADS % 32 == 0, "block_sums needs whole warps");
  constexpr int W = THREADS / 32;
  for (int k = 0; k < NV; ++k)
    v[k] = warp_sum(v[k]);
  if (W == 1) return;
  if (lane_id() == 0)
    for (int k = 0; k < NV; ++k)
      scratch[k * W + warp_id()] = v[k];
  sync_threads();
  for (int k = 0; k < NV; ++k) {
    v[k] = 0.f;
    for (int w = 0; w < W; ++w)
      v[k] += scratch[k * W + w];
  }
  sync_threads();
}

// scratch: THREADS floats.
template <int THREADS, int COLS> KILN_FN float column_sum(float v, Shared<float> scratch) {
  static_assert(THREADS % COLS == 0, "column_sum needs whole rows");
  const int t = int(threadIdx.x);
  scratch[t] = v;
  sync_threads();
  float s = 0.f;
  for (int r = 0; r < THREADS / COLS; ++r)
    s += scratch[r * COLS + t % COLS];
  sync_threads();
  return s;
}

// NV column sums at once. scratch: NV * THREADS floats.
template <int THREADS, int COLS, int NV>
KILN_FN void column_sums(float (&v)[NV], Shared<float> scratch) {
  static_assert(THREADS % COLS == 0, "column_sums needs whole rows");
  const int t = int(threadIdx.x);
  for (int k = 0; k < NV; ++k)
    scratch[k * THREADS + t] = v[k];
  sync_threads();
  for (int k = 0; k < NV; ++k) {
    v[k] = 0.f;
    for (int r = 0; r < THREADS / COLS; ++r)
      v[k] += scratch[k * THREADS + r * COLS + t % COLS];
  }
  sync_threads();
}

} // namespace kiln::dense
