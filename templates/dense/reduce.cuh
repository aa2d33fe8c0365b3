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
//
// The reduce op's kernels (ONNX ReduceSum / ReduceMean / ReduceMax over any of C, H, W of
// [N, C, H, W]) are at the end: reduce_forward and reduce_backward, a warp per output.
#pragma once

#include "common/kiln.cuh"
#include "common/tensor4.cuh"

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

// The reduce op: a warp per output, its lanes striding over the output's R reduced elements
// (in (c, h, w) order), combined by the butterflies above, so every output is computed in a
// fixed order. Arithmetic in fp32.
//
//   forward: y = sum (MODE 0), sum / R (MODE 1) or max (MODE 2) of the elements.
//   backward: dx = dy (sum), dy / R (mean), or dy at the output's first maximum in
//     (c, h, w) order and 0 elsewhere (max, as PyTorch; the maximum found again from x);
//     added to dx when ACCUMULATE.
//
// Cfg: T, N, C, H, W (x's extents as [N, C, H, W]), RC, RH, RW (the reduced axes), MODE,
//      XN, XC, XH, XW and YN, YC, YH, YW (element strides of x and of y seen as
//      [N, C', H', W'], so one kernel serves NCHW, NHWC and y of any rank), THREADS,
//      ACCUMULATE (backward). Grid-stride over outputs.
// Arguments, in order: forward: x, y · backward: dy, dx (sum, mean) or x, dy, dx (max).
template <class Cfg> struct ReduceMap {
  static constexpr int OC = Cfg::RC ? 1 : Cfg::C, OH = Cfg::RH ? 1 : Cfg::H,
                       OW = Cfg::RW ? 1 : Cfg::W;
  static constexpr int KC = Cfg::RC ? Cfg::C : 1, KH = Cfg::RH ? Cfg::H : 1,
                       KW = Cfg::RW ? Cfg::W : 1;
  static constexpr long long P = (long long)Cfg::N * OC * OH * OW; // outputs
  static constexpr int R = KC * KH * KW;                           // elements per output
  using I = index_t<(long long)Cfg::N * Cfg::C * Cfg::H * Cfg::W>;
  static constexpr int PER_BLOCK = Cfg::THREADS / 32;
  static_assert(Cfg::THREADS % 32 == 0, "whole warps");

  static KILN_FN I first() { return I(blockIdx.x) * PER_BLOCK + I(threadIdx.x) / 32; }
  static KILN_FN I step() { return I(gridDim.x) * PER_BLOCK; }
  // Offsets of output p's first element in x and of p in y.
  static KILN_FN I x_base(I p) {
    const int w = int(p % OW), h = int(p / OW % OH), c = int(p / (OW * OH) % OC);
    const I n = p / (I(OW) * OH * OC);
    return n * Cfg::XN + I(Cfg::RC ? 0 : c) * Cfg::XC + I(Cfg::RH ? 0 : h) * Cfg::XH +
           I(Cfg::RW ? 0 : w) * Cfg::XW;
  }
  static KILN_FN I y_at(I p) {
    const int w = int(p % OW), h = int(p / OW % OH), c = int(p / (OW * OH) % OC);
    const I n = p / (I(OW) * OH * OC);
    return n * Cfg::YN + I(c) * Cfg::YC + I(h) * Cfg::YH + I(w) * Cfg::YW;
  }
  // Offset of reduced element r from its output's first.
  static KILN_FN I x_step(int r) {
    return I(r / (KW * KH)) * Cfg::XC + I(r / KW % KH) * Cfg::XH + I(r % KW) * Cfg::XW;
  }
};

template <class Cfg> KILN_FN void reduce_forward(const KernelArgs& a) {
  using T = typename Cfg::T;
  using M = ReduceMap<Cfg>;
  using I = typename M::I;
  const Global<const T> x = arg<const T>(a, 0);
  const Global<T> y = arg<T>(a, 1);
  // p is uniform across a warp, so the butterflies see whole warps.
  for (I p = M::first(); p < M::P; p += M::step()) {
    const I b = M::x_base(p);
    float v = Cfg::MODE == 2 ? -__int_as_float(0x7f800000) : 0.f;
    for (int r = lane_id(); r < M::R; r += 32) {
      const float e = to_float(x[b + M::x_step(r)]);
      v = Cfg::MODE == 2 ? fmaxf(v, e) : v + e;
    }
    v = Cfg::MODE == 2 ? warp_max(v) : warp_sum(v);
    if (Cfg::MODE == 1) v /= float(M::R);
    if (lane_id() == 0) y[M::y_at(p)] = from_float<T>(v);
  }
}

template <class Cfg> KILN_FN void reduce_backward(const KernelArgs& a) {
  using T = typename Cfg::T;
  using M = ReduceMap<Cfg>;
  using I = typename M::I;
  constexpr int first = Cfg::MODE == 2 ? 1 : 0; // x comes first for max
  const Global<const T> dy = arg<const T>(a, first);
  const Global<T> dx = arg<T>(a, first + 1);
  for (I p = M::first(); p < M::P; p += M::step()) {
    const I b = M::x_base(p);
    float g = to_float(dy[M::y_at(p)]);
    if (Cfg::MODE == 1) g /= float(M::R);
    int at = -1; // max: the output's first maximum, the same in every lane
    if constexpr (Cfg::MODE == 2) {
      const Global<const T> x = arg<const T>(a, 0);
      float best = -__int_as_float(0x7f800000);
      at = M::R;
      for (int r = lane_id(); r < M::R; r += 32) {
        const float e = to_float(x[b + M::x_step(r)]);
        if (e > best) best = e, at = r; // r rises: ties keep the first
      }
      for (int m = 16; m >= 1; m >>= 1) {
        const float ob = shfl_xor(best, m);
        const int oa = shfl_xor(at, m);
        if (ob > best || (ob == best && oa < at)) best = ob, at = oa;
      }
      if (at == M::R) at = 0; // every element NaN: as the CPU reference, the first
    }
    for (int r = lane_id(); r < M::R; r += 32) {
      const I i = b + M::x_step(r);
      const float v = Cfg::MODE == 2 ? (r == at ? g : 0.f) : g;
      dx[i] = from_float<T>(Cfg::ACCUMULATE ? to_float(dx[i]) + v : v);
    }
  }
}

} // namespace kiln::dense
