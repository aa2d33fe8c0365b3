// Padding of [N, C, H, W] (NCHW or NHWC) over H and W to [N, C, OH, OW]: output (oh, ow)
// reads input (oh - PT, ow - PL) where it lies inside; outside, MODE 0 writes VALUE
// (constant), 1 the mirror image without the edge (reflect: -i, 2 (H - 1) - i; padding <
// extent), 2 the edge element (edge). The backward is a gather, deterministic: each dx
// element sums the dy elements whose source it is (itself; reflect: its one or two mirror
// images; edge: the whole border run of an edge element), rows then columns.
// One thread per element of the written tensor, in its memory order.
//
// Cfg: T, N, C, H, W (x or dx), PT, PL, OH, OW, MODE, VALUE (float), NHWC, THREADS;
//      backward: ACCUMULATE.
// Arguments, in order: forward: x, y · backward: dy, dx.
// Grid: any, 1-D blocks of THREADS threads (a grid-stride loop).
#pragma once

#include "common/grid_stride.cuh"
#include "common/tensor4.cuh"

namespace kiln::spatial {

// The source of output o along an axis (before: the padding before it); -1: the constant.
template <int MODE, int IN> KILN_FN int pad_source(int o, int before) {
  const int i = o - before;
  if (i >= 0 && i < IN) return i;
  if (MODE == 0) return -1;
  if (MODE == 2) return i < 0 ? 0 : IN - 1;
  return i < 0 ? -i : 2 * (IN - 1) - i;
}

// The outputs along an axis whose source is input i: up to three runs [lo, hi).
template <int MODE, int IN, int OUT> struct PadSinks {
  int lo[3], hi[3], count;
  KILN_FN PadSinks(int i, int before) : lo{0, 0, 0}, hi{0, 0, 0}, count(0) {
    add(i + before, i + before + 1); // itself
    if (MODE == 1) {
      if (i > 0) add(before - i, before - i + 1); // mirrored before
      if (i < IN - 1) add(before + 2 * (IN - 1) - i, before + 2 * (IN - 1) - i + 1); // after
    } else if (MODE == 2) {
      if (i == 0) add(0, before);             // the run before the first element
      if (i == IN - 1) add(before + IN, OUT); // the run after the last
    }
  }
  KILN_FN void add(int a, int b) {
    a = a < 0 ? 0 : a;
    b = b > OUT ? OUT : b;
    if (a >= b) return;
    lo[count] = a;
    hi[count] = b;
    ++count;
  }
};

template <class Cfg> using pad_index_t = index_t<i64(Cfg::N) * Cfg::C * i64(Cfg::OH) * Cfg::OW>;

template <class Cfg> KILN_FN void pad_forward(const KernelArgs& a) {
  using T = typename Cfg::T;
  using I = pad_index_t<Cfg>;
  using X = Tensor4<Cfg::NHWC, Cfg::N, Cfg::C, Cfg::H, Cfg::W, I>;
  using Y = Tensor4<Cfg::NHWC, Cfg::N, Cfg::C, Cfg::OH, Cfg::OW, I>;
  const Global<const T> x = arg<const T>(a, 0);
  const Global<T> y = arg<T>(a, 1);
  for (I o = grid_first<I, Cfg::THREADS>(); o < Y::count; o += grid_step<I, Cfg::THREADS>()) {
    const Coord4<I> p = Y::coord(o);
    const int ih = pad_source<Cfg::MODE, Cfg::H>(int(p.h), Cfg::PT);
    const int iw = pad_source<Cfg::MODE, Cfg::W>(int(p.w), Cfg::PL);
    y[o] = ih < 0 || iw < 0 ? from_float<T>(Cfg::VALUE) : x[X::at(p.n, p.c, I(ih), I(iw))];
  }
}

template <class Cfg> KILN_FN void pad_backward(const KernelArgs& a) {
  using T = typename Cfg::T;
  using I = pad_index_t<Cfg>;
  using X = Tensor4<Cfg::NHWC, Cfg::N, Cfg::C, Cfg::H, Cfg::W, I>;
  using Y = Tensor4<Cfg::NHWC, Cfg::N, Cfg::C, Cfg::OH, Cfg::OW, I>;
  const Global<const T> dy = arg<const T>(a, 0);
  const Global<T> dx = arg<T>(a, 1);
  for (I i = grid_first<I, Cfg::THREADS>(); i < X::count; i += grid_step<I, Cfg::THREADS>()) {
    const Coord4<I> p = X::coord(i);
    const PadSinks<Cfg::MODE, Cfg::H, Cfg::OH> rows(int(p.h), Cfg::PT);
    const PadSinks<Cfg::MODE, Cfg::W, Cfg::OW> cols(int(p.w), Cfg::PL);
    float g = 0.f;
    for (int r = 0; r < rows.count; ++r)
      for (int oh = rows.lo[r]; oh < rows.hi[r]; ++oh)
        for (int q = 0; q < cols.count; ++q)
          for (int ow = cols.lo[q]; ow < cols.hi[q]; ++ow)
            g += to_float(dy[Y::at(p.n, p.c, I(oh), I(ow))]);
    store_grad<Cfg::ACCUMULATE>(dx, i, g);
  }
}

} // namespace kiln::spatial
