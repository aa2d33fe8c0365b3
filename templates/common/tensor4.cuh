// The one description of a 4-D tensor's memory for every template: [N, C, H, W] with
// compile-time sizes in either order (NCHW or NHWC), and the narrowest index type that
// addresses it. Convolutions, pooling, copies and the compacted sparse form (a [N, SL, H, W]
// NHWC tensor of units) all index through it.
#pragma once

#include "common/kiln.cuh"

namespace kiln {

// The offset type for tensors of at most `count` elements: int when every offset fits in 31
// bits (fewer registers, cheaper division by constants), else 64-bit.
template <i64 count> using index_t = typename pick<(count <= 2147483647LL), int, i64>::type;

// Logical coordinates of one element.
template <class I> struct Coord4 {
  I n;
  int c, h, w;
};

// A [N, C, H, W] tensor laid out NCHW or NHWC: offsets of elements and planes, and the
// coordinates of a memory position.
template <bool NHWC, i64 N, int C, int H, int W, class I = index_t<N * C * H * W>> struct Tensor4 {
  using index = I;
  static constexpr i64 count = N * C * H * W;
  // Distance between vertically and horizontally adjacent elements of one channel.
  static constexpr int row = NHWC ? W * C : W;
  static constexpr int col = NHWC ? C : 1;

  // Offset of element (n, c, h, w).
  static KILN_FN I at(I n, int c, int h, int w) {
    return NHWC ? ((n * H + h) * W + w) * C + c : ((n * C + c) * H + h) * W + w;
  }
  // Offset of element (n, c, 0, 0): a plane's elements are at plane + h * row + w * col.
  static KILN_FN I plane(I n, int c) {
    return NHWC ? n * (I(H) * W * C) + c : (n * C + c) * (I(H) * W);
  }

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

// Cfg::NHWC where an instance names it, else false (NCHW): the layout flag of families whose
// older instances predate it.
template <class Cfg, class = void> struct NhwcOf { static constexpr bool value = false; };
template <class Cfg> struct NhwcOf<Cfg, decltype(void(Cfg::NHWC))> {
  static constexpr bool value = Cfg::NHWC;
};

} // namespace kiln
