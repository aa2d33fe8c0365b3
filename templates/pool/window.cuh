// Pooling windows along one axis, with PyTorch's rules (runtime/cpu/pool.cpp): output o
// covers inputs [o*S - P, o*S - P + K), clipped to the input; count_include_pad divides by
// the window clipped to the padded input only ([start, min(start + K, IN + P))). Adaptive
// windows: [floor(o*IN/OUT), ceil((o+1)*IN/OUT)) (runtime/op.hpp).
#pragma once

#include "common/kiln.cuh"

namespace kiln::pool {

// A window along one axis: input elements [lo, hi); `padded` its extent in the padded input.
struct Span {
  int lo, hi, padded;
};

template <int K, int S, int P, int PE, int IN> KILN_FN Span pool_span(int o) {
  const int start = o * S - P;
  const int end = min_of(start + K, IN + PE); // PE: the padding after the input
  return Span{max_of(start, 0), min_of(end, IN), end - start};
}

// The outputs [lo, hi) whose windows contain input index i (every window containing i
// contains it whole: clipping only removes padding).
struct Cover {
  int lo, hi;
};

template <int K, int S, int P, int OUT> KILN_FN Cover pool_cover(int i) {
  const int t = i + P - K + 1; // the first output's window must end after i
  return Cover{t <= 0 ? 0 : (t + S - 1) / S, min_of((i + P) / S + 1, OUT)};
}

// Adaptive pooling: the window of output o, and the outputs whose windows contain input i.
template <int IN, int OUT> KILN_FN Span adaptive_span(int o) {
  const int lo = int(i64(o) * IN / OUT), hi = int((i64(o + 1) * IN + OUT - 1) / OUT);
  return Span{lo, hi, hi - lo};
}

template <int IN, int OUT> KILN_FN Cover adaptive_cover(int i) {
  // end(o) > i  <=>  o >= floor(i*OUT/IN);  begin(o) <= i  <=>  o <= floor(((i+1)*OUT - 1)/IN)
  return Cover{int(i64(i) * OUT / IN), min_of(int((i64(i + 1) * OUT - 1) / IN) + 1, OUT)};
}

// The divisor of an average over a window: count_include_pad uses the padded extents.
template <bool COUNT_PAD> KILN_FN float pool_divisor(const Span& h, const Span& w) {
  return COUNT_PAD ? float(h.padded * w.padded) : float((h.hi - h.lo) * (w.hi - w.lo));
}

// Flat index (ih * row + iw * col, relative to the plane) of the first maximum of a
// window, as the reference picks it: the first in row-major order, except that a NaN wins
// (the last NaN). The window is never empty. `best` receives the maximum.
template <int ROW, int COL, class I, class T>
KILN_FN I window_argmax(Global<const T> plane, const Span& h, const Span& w, float& best) {
  I bi = I(h.lo) * ROW + I(w.lo) * COL;
  best = to_float(plane[bi]);
  for (int ih = h.lo; ih < h.hi; ++ih)
    for (int iw = w.lo; iw < w.hi; ++iw) {
      const I i = I(ih) * ROW + I(iw) * COL;
      const float v = to_float(plane[i]);
      if (v > best || v != v) best = v, bi = i;
    }
  return bi;
}

} // namespace kiln::pool
