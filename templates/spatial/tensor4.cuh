// Index arithmetic for [N, C, H, W] tensors with compile-time sizes, in either memory order
// (NCHW or NHWC), shared by the pooling, upsampling and concatenation templates.
#pragma once

#include "common/kiln.cuh"

namespace kiln::spatial {

// The narrowest index type that holds every element index of a tensor: int when the
// element count fits in 31 bits (cheaper division by constants), else i64.
template <bool Wide> struct IndexType { using type = int; };
template <> struct IndexType<true> { using type = i64; };
template <i64 Count> using index_t = typename IndexType<(Count > 2147483647LL)>::type;

// Logical coordinates of one element.
template <class I> struct Coord4 {
  I n;
  int c, h, w;
};

// A [N, C, H, W] tensor laid out NCHW or NHWC: offsets of elements and planes, and the
// coordinates of a memory position.
template <bool NHWC, int N, int C, int H, int W, class I = index_t<i64(N) * C * H * W>>
struct Tensor4 {
  static constexpr i64 count = i64(N) * C * H * W;
  // Distance between vertically and horizontally adjacent elements of one channel.
  static constexpr int row = NHWC ? W * C : W;
  static constexpr int col = NHWC ? C : 1;

  // Offset of element (n, c, 0, 0).
  static KILN_FN I plane(I n, int c) {
    return NHWC ? n * (I(H) * W * C) + c : (n * C + c) * (I(H) * W);
  }
  static KILN_FN I at(I n, int c, int h, int w) { return plane(n, c) + I(h) * row + I(w) * col; }

  // Coordinates of the element at memory position i.
  static KILN_FN Coord4<I> coord(I i) {
    Coord4<I> p;
    if (NHWC) {
      p.c = int(i % C);
      I t = i / C;
      p.w = int(t % W);
      t /= W;
      p.h = int(t % H);
      p.n = t / H;
    } else {
      p.w = int(i % W);
      I t = i / W;
      p.h = int(t % H);
      t /= H;
      p.c = int(t % C);
      p.n = t / C;
    }
    return p;
  }
};

// The first index and the step of a grid-stride loop over 1-D blocks of THREADS threads.
template <class I, int THREADS> KILN_FN I grid_first() {
  return I(blockIdx.x) * THREADS + I(threadIdx.x);
}
template <class I, int THREADS> KILN_FN I grid_step() { return I(gridDim.x) * THREADS; }

// Stores v into a gradient element, adding the element's old value first when ACCUMULATE.
template <bool ACCUMULATE, class T> KILN_FN void store_grad(Global<T> p, i64 i, float v) {
  if (ACCUMULATE) v += to_float(p[i]);
  p[i] = from_float<T>(v);
}

} // namespace kiln::spatial
