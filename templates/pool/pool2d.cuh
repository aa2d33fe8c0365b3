// Max and average pooling forward over [N, C, H, W] (NCHW or NHWC), PyTorch's semantics:
// padding, ceil_mode (in OH, OW), count_include_pad; maxpool takes the first maximum of
// each window in row-major order (a NaN wins). One thread per output element, in the
// output's memory order (NHWC: consecutive threads read consecutive channels); the window
// is read straight from global memory (overlapping windows hit the L1 cache). NHWC with
// VEC > 1: VEC consecutive channels per thread, each window element one VEC-wide load (16
// bytes at VEC * sizeof(T) = 16; the H200 measured the one-element form at 545 GB/s).
//
// Cfg: T (element type), MAX (max, else average), N, C, H, W (input), OH, OW (output),
//      KH, KW, SH, SW, PH, PW, PH_END, PW_END (window, stride, padding before and after), COUNT_PAD
//      (average: count_include_pad), NHWC, VEC (channels per thread: 1, or with NHWC a
//      divisor of C with VEC * sizeof(T) <= 16), THREADS; Y_PITCH (optional: y a channel
//      window of a concat's output, its runs, C*OH*OW elements per image in NCHW or C per
//      pixel in NHWC, Y_PITCH apart; a multiple of VEC). Every window holds at least one
//      input element.
// Arguments, in order: x, y.
// Grid: any, 1-D blocks of THREADS threads (a grid-stride loop covers y).
#pragma once

#include "pool/pool_tensors.cuh"

namespace kiln::pool {

template <class Cfg> KILN_FN void pool2d_forward_vec(const KernelArgs& a) {
  using T = typename Cfg::T;
  using X = PoolX<Cfg>;
  using Y = PoolY<Cfg>;
  using I = typename X::index;
  constexpr int V = Cfg::VEC;
  using P = Pack<T, V>;
  static_assert(Cfg::NHWC && Cfg::C % V == 0 && sizeof(P) <= 16, "VEC channels of NHWC");
  constexpr long long YP = y_pitch_of<Cfg, Cfg::C>::value;
  static_assert(YP % V == 0, "a pitch of whole VEC packs");
  const Global<const P> x = view_as<const P>(arg<const T>(a, 0));
  const Global<P> y = view_as<P>(arg<T>(a, 1));
  for (I o = grid_first<I, Cfg::THREADS>(); o < Y::count / V; o += grid_step<I, Cfg::THREADS>()) {
    const Coord4<I> p = Y::coord(o * V); // p.c: a multiple of V
    const Span h = pool_span<Cfg::KH, Cfg::SH, Cfg::PH, Cfg::PH_END, Cfg::H>(p.h);
    const Span w = pool_span<Cfg::KW, Cfg::SW, Cfg::PW, Cfg::PW_END, Cfg::W>(p.w);
    const I plane = X::plane(p.n, p.c); // every offset below a multiple of V
    float v[V];
    if constexpr (Cfg::MAX) { // as window_argmax, per channel
      const P first = x[(plane + I(h.lo) * X::row + I(w.lo) * X::col) / V];
      for (int e = 0; e < V; ++e)
        v[e] = to_float(first.e[e]);
    } else {
      for (int e = 0; e < V; ++e)
        v[e] = 0.f;
    }
    for (int ih = h.lo; ih < h.hi; ++ih)
      for (int iw = w.lo; iw < w.hi; ++iw) {
        const P q = x[(plane + I(ih) * X::row + I(iw) * X::col) / V];
        for (int e = 0; e < V; ++e) {
          const float f = to_float(q.e[e]);
          if constexpr (Cfg::MAX) {
            if (f > v[e] || f != f) v[e] = f;
          } else {
            v[e] += f;
          }
        }
      }
    P out;
    for (int e = 0; e < V; ++e) {
      if constexpr (!Cfg::MAX) v[e] /= pool_divisor<Cfg::COUNT_PAD>(h, w);
      out.e[e] = from_float<T>(v[e]);
    }
    y[pitched_index<Cfg::C / V, YP / V>(o)] = out;
  }
}

template <class Cfg> KILN_FN void pool2d_forward(const KernelArgs& a) {
  if constexpr (Cfg::VEC > 1) {
    pool2d_forward_vec<Cfg>(a);
    return;
  }
  using T = typename Cfg::T;
  using X = PoolX<Cfg>;
  using Y = PoolY<Cfg>;
  using I = typename X::index;
  const Global<const T> x = arg<const T>(a, 0);
  const Global<T> y = arg<T>(a, 1);
  for (I o = grid_first<I, Cfg::THREADS>(); o < Y::count; o += grid_step<I, Cfg::THREADS>()) {
    const Coord4<I> p = Y::coord(o);
    const Span h = pool_span<Cfg::KH, Cfg::SH, Cfg::PH, Cfg::PH_END, Cfg::H>(p.h);
    const Span w = pool_span<Cfg::KW, Cfg::SW, Cfg::PW, Cfg::PW_END, Cfg::W>(p.w);
    const Global<const T> plane = x + X::plane(p.n, p.c);
    float v;
    if constexpr (Cfg::MAX) {
      window_argmax<X::row, X::col, I>(plane, h, w, v);
    } else {
      v = 0.f;
      for (int ih = h.lo; ih < h.hi; ++ih)
        for (int iw = w.lo; iw < w.hi; ++iw)
          v += to_float(plane[I(ih) * X::row + I(iw) * X::col]);
      v /= pool_divisor<Cfg::COUNT_PAD>(h, w);
    }
    constexpr long long RUN = Cfg::NHWC ? Cfg::C : (long long)Cfg::C * Cfg::OH * Cfg::OW;
    y[pitched_index<RUN, y_pitch_of<Cfg, RUN>::value>(o)] = from_float<T>(v);
  }
}

} // namespace kiln::pool
