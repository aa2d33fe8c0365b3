// Max and average pooling backward over [N, C, H, W] (NCHW or NHWC), as gathers: each dx
// element sums, in the reference's order (output rows, then columns, ascending), the
// gradients of the windows that contain it: deterministic, no atomics.
//  - maxpool2d_backward_direct: a window passes its gradient to its first maximum (a NaN
//    wins), recomputed from x for every window containing the element.
//  - maxpool2d_backward_tiled: a block owns a TC x TH x TW tile of dx; it first computes the
//    maximum's position and the gradient of every window touching the tile once, into
//    shared memory, then each thread gathers for its element from there.
//    VEC > 1 (NHWC, optional): VEC consecutive channels per item and per thread, every x, dy
//    and dx access one VEC-wide load or store (16 bytes): the one-element form ran an H100's
//    resnet50 stem backward at 14x its DRAM floor, its 2-byte window loads latency-bound.
//  - avgpool2d_backward: each window passes dy / divisor (count_include_pad rule).
//
// Cfg: T, N, C, H, W (x and dx), OH, OW (dy), KH, KW, SH, SW, PH, PW, PH_END, PW_END, NHWC,
// ACCUMULATE (add
//      into dx), THREADS; average: COUNT_PAD; tiled: TC, TH, TW with THREADS = TC/VEC*TH*TW
//      (NCHW: TC = 1), VEC (optional, above; C and TC multiples of it).
// Arguments, in order: max: x, dy, dx · average: dy, dx.
// Grid: direct and average: any, 1-D (grid-stride loop over dx in memory order); tiled:
//      exactly N * ceil(C/TC) * ceil(H/TH) * ceil(W/TW) 1-D blocks.
#pragma once

#include "pool/pool_tensors.cuh"

namespace kiln::pool {

template <class Cfg> KILN_FN void maxpool2d_backward_direct(const KernelArgs& a) {
  using T = typename Cfg::T;
  using X = PoolX<Cfg>;
  using Y = PoolY<Cfg>;
  using I = typename X::index;
  const Global<const T> x = arg<const T>(a, 0);
  const Global<const T> dy = arg<const T>(a, 1);
  const Global<T> dx = arg<T>(a, 2);
  for (I i = grid_first<I, Cfg::THREADS>(); i < X::count; i += grid_step<I, Cfg::THREADS>()) {
    const Coord4<I> p = X::coord(i);
    const Cover ch = pool_cover<Cfg::KH, Cfg::SH, Cfg::PH, Cfg::OH>(p.h);
    const Cover cw = pool_cover<Cfg::KW, Cfg::SW, Cfg::PW, Cfg::OW>(p.w);
    const Global<const T> xp = x + X::plane(p.n, p.c);
    const Global<const T> dyp = dy + Y::plane(p.n, p.c);
    const I me = I(p.h) * X::row + I(p.w) * X::col;
    float g = 0.f;
    for (int oh = ch.lo; oh < ch.hi; ++oh) {
      const Span h = pool_span<Cfg::KH, Cfg::SH, Cfg::PH, Cfg::PH_END, Cfg::H>(oh);
      for (int ow = cw.lo; ow < cw.hi; ++ow) {
        const Span w = pool_span<Cfg::KW, Cfg::SW, Cfg::PW, Cfg::PW_END, Cfg::W>(ow);
        float best;
        if (window_argmax<X::row, X::col, I>(xp, h, w, best) == me)
          g += to_float(dyp[I(oh) * Y::row + I(ow) * Y::col]);
      }
    }
    store_grad<Cfg::ACCUMULATE>(dx, i, g);
  }
}

// The dx tile block blockIdx.x of a tiled gather owns (TC channels x TH rows x TW columns, the
// tiles of image n channel-block fastest after columns and rows), and the windows touching it:
// output rows [oh0, oh1) and columns [ow0, ow1), at most MH x MW of them.
template <class Cfg> struct DxTile {
  static constexpr int TC = Cfg::TC, TH = Cfg::TH, TW = Cfg::TW;
  static constexpr int MH = (TH + Cfg::KH - 2) / Cfg::SH + 1, MW = (TW + Cfg::KW - 2) / Cfg::SW + 1;
  static constexpr int CT = ceil_div(Cfg::C, TC), HT = ceil_div(Cfg::H, TH),
                       WT = ceil_div(Cfg::W, TW);
  i64 n;
  int h0, w0, c0, oh0, oh1, ow0, ow1;
  KILN_FN DxTile() {
    const int tile = int(blockIdx.x);
    const int wt = tile % WT, ht = (tile / WT) % HT, ct = (tile / (WT * HT)) % CT;
    n = i64(tile / (WT * HT * CT));
    h0 = ht * TH, w0 = wt * TW, c0 = ct * TC;
    oh0 = pool_cover<Cfg::KH, Cfg::SH, Cfg::PH, Cfg::OH>(h0).lo;
    oh1 = pool_cover<Cfg::KH, Cfg::SH, Cfg::PH, Cfg::OH>(min_of(h0 + TH, Cfg::H) - 1).hi;
    ow0 = pool_cover<Cfg::KW, Cfg::SW, Cfg::PW, Cfg::OW>(w0).lo;
    ow1 = pool_cover<Cfg::KW, Cfg::SW, Cfg::PW, Cfg::OW>(min_of(w0 + TW, Cfg::W) - 1).hi;
  }
};

// VEC (channels per item): absent, 1.
template <class Cfg, class = void> struct vec_of { static constexpr int value = 1; };
template <class Cfg> struct vec_of<Cfg, decltype(void(Cfg::VEC))> {
  static constexpr int value = Cfg::VEC;
};

// The tiled gather with VEC channels a thread (the header above). Shared memory holds, per
// window touching the tile and channel, its first maximum's position and its gradient, laid
// out [channel of the pack][window][pack] so that consecutive threads (packs) read and write
// consecutive words in both phases.
template <class Cfg> KILN_FN void maxpool2d_backward_tiled_vec(const KernelArgs& a) {
  using T = typename Cfg::T;
  using X = PoolX<Cfg>;
  using Y = PoolY<Cfg>;
  using I = typename X::index;
  constexpr int V = Cfg::VEC, TC = Cfg::TC, TH = Cfg::TH, TW = Cfg::TW, TP = TC / V;
  using P = Pack<T, V>;
  static_assert(Cfg::NHWC && Cfg::C % V == 0 && TC % V == 0 && sizeof(P) <= 16,
                "VEC channels of NHWC");
  constexpr int MW = DxTile<Cfg>::MW, WINDOWS = DxTile<Cfg>::MH * MW, ITEMS = WINDOWS * TP;
  static_assert(Cfg::THREADS == TP * TH * TW, "one dx pack per thread");
  KILN_SHARED_ARRAY(I, argmax, ITEMS * V);
  KILN_SHARED_ARRAY(float, grad, ITEMS* V);

  const Global<const P> x = view_as<const P>(arg<const T>(a, 0));
  const Global<const P> dy = view_as<const P>(arg<const T>(a, 1));
  const Global<P> dx = view_as<P>(arg<T>(a, 2));
  const DxTile<Cfg> tile;
  const I n = I(tile.n);
  const int h0 = tile.h0, w0 = tile.w0, c0 = tile.c0, oh0 = tile.oh0, oh1 = tile.oh1,
            ow0 = tile.ow0, ow1 = tile.ow1;

  for (int item = int(threadIdx.x); item < ITEMS; item += Cfg::THREADS) {
    const int pk = item % TP, win = item / TP;
    const int c = c0 + pk * V, oh = oh0 + win / MW, ow = ow0 + win % MW;
    if (c >= Cfg::C || oh >= oh1 || ow >= ow1) continue;
    const Span h = pool_span<Cfg::KH, Cfg::SH, Cfg::PH, Cfg::PH_END, Cfg::H>(oh);
    const Span w = pool_span<Cfg::KW, Cfg::SW, Cfg::PW, Cfg::PW_END, Cfg::W>(ow);
    const I plane = X::plane(n, c); // every offset below a multiple of V
    // As window_argmax, per channel: the first maximum in row-major order, a NaN winning.
    I bi[V];
    float best[V];
    {
      const I at = I(h.lo) * X::row + I(w.lo) * X::col;
      const P first = x[(plane + at) / V];
      for (int e = 0; e < V; ++e)
        best[e] = to_float(first.e[e]), bi[e] = at;
    }
    // Loops of constant trip counts, each load predicated: all of a window's loads can be in
    // flight at once (the one-element form waits for each in turn).
#pragma unroll
    for (int kh = 0; kh < Cfg::KH; ++kh)
#pragma unroll
      for (int kw = 0; kw < Cfg::KW; ++kw) {
        const int ih = h.lo + kh, iw = w.lo + kw;
        if (ih >= h.hi || iw >= w.hi) continue;
        const I at = I(ih) * X::row + I(iw) * X::col;
        const P q = x[(plane + at) / V];
        for (int e = 0; e < V; ++e) {
          const float f = to_float(q.e[e]);
          if (f > best[e] || f != f) best[e] = f, bi[e] = at;
        }
      }
    const P g = dy[Y::at(n, c, oh, ow) / V];
    for (int e = 0; e < V; ++e) {
      argmax[(e * WINDOWS + win) * TP + pk] = bi[e];
      grad[(e * WINDOWS + win) * TP + pk] = to_float(g.e[e]);
    }
  }
  sync_threads();

  const int t = int(threadIdx.x);
  const int pk = t % TP, tw = (t / TP) % TW, th = t / (TP * TW);
  const int c = c0 + pk * V, ih = h0 + th, iw = w0 + tw;
  if (c >= Cfg::C || ih >= Cfg::H || iw >= Cfg::W) return;
  const Cover ch = pool_cover<Cfg::KH, Cfg::SH, Cfg::PH, Cfg::OH>(ih);
  const Cover cw = pool_cover<Cfg::KW, Cfg::SW, Cfg::PW, Cfg::OW>(iw);
  const I me = I(ih) * X::row + I(iw) * X::col;
  float g[V];
  for (int e = 0; e < V; ++e)
    g[e] = 0.f;
  for (int oh = ch.lo; oh < ch.hi; ++oh)
    for (int ow = cw.lo; ow < cw.hi; ++ow) {
      const int win = (oh - oh0) * MW + (ow - ow0);
      for (int e = 0; e < V; ++e)
        if (I(argmax[(e * WINDOWS + win) * TP + pk]) == me)
          g[e] += grad[(e * WINDOWS + win) * TP + pk];
    }
  const I at = X::at(n, c, ih, iw) / V;
  P out;
  if constexpr (Cfg::ACCUMULATE) {
    const P old = dx[at];
    for (int e = 0; e < V; ++e)
      g[e] += to_float(old.e[e]);
  }
  for (int e = 0; e < V; ++e)
    out.e[e] = from_float<T>(g[e]);
  dx[at] = out;
}

template <class Cfg> KILN_FN void maxpool2d_backward_tiled_one(const KernelArgs& a) {
  using T = typename Cfg::T;
  using X = PoolX<Cfg>;
  using Y = PoolY<Cfg>;
  using I = typename X::index;
  constexpr int TC = Cfg::TC, TH = Cfg::TH, TW = Cfg::TW;
  constexpr int MH = DxTile<Cfg>::MH, MW = DxTile<Cfg>::MW;
  static_assert(Cfg::THREADS == TC * TH * TW, "one dx element per thread");
  static_assert(Cfg::NHWC || TC == 1, "NCHW tiles are spatial");
  // Per window touching the tile (channel fastest): its maximum's position and gradient.
  KILN_SHARED_ARRAY(I, argmax, MH * MW * TC);
  KILN_SHARED_ARRAY(float, grad, MH* MW* TC);

  const Global<const T> x = arg<const T>(a, 0);
  const Global<const T> dy = arg<const T>(a, 1);
  const Global<T> dx = arg<T>(a, 2);
  const DxTile<Cfg> tile;
  const I n = I(tile.n);
  const int h0 = tile.h0, w0 = tile.w0, c0 = tile.c0, oh0 = tile.oh0, oh1 = tile.oh1,
            ow0 = tile.ow0, ow1 = tile.ow1;

  for (int item = int(threadIdx.x); item < MH * MW * TC; item += Cfg::THREADS) {
    const int c = c0 + item % TC, oh = oh0 + item / (TC * MW), ow = ow0 + (item / TC) % MW;
    if (c >= Cfg::C || oh >= oh1 || ow >= ow1) continue;
    const Span h = pool_span<Cfg::KH, Cfg::SH, Cfg::PH, Cfg::PH_END, Cfg::H>(oh);
    const Span w = pool_span<Cfg::KW, Cfg::SW, Cfg::PW, Cfg::PW_END, Cfg::W>(ow);
    float best;
    argmax[item] = window_argmax<X::row, X::col, I>(x + X::plane(n, c), h, w, best);
    grad[item] = to_float(dy[Y::at(n, c, oh, ow)]);
  }
  sync_threads();

  const int e = int(threadIdx.x);
  const int tc = e % TC, tw = (e / TC) % TW, th = e / (TC * TW);
  const int c = c0 + tc, ih = h0 + th, iw = w0 + tw;
  if (c >= Cfg::C || ih >= Cfg::H || iw >= Cfg::W) return;
  const Cover ch = pool_cover<Cfg::KH, Cfg::SH, Cfg::PH, Cfg::OH>(ih);
  const Cover cw = pool_cover<Cfg::KW, Cfg::SW, Cfg::PW, Cfg::OW>(iw);
  const I me = I(ih) * X::row + I(iw) * X::col;
  float g = 0.f;
  for (int oh = ch.lo; oh < ch.hi; ++oh)
    for (int ow = cw.lo; ow < cw.hi; ++ow) {
      const int item = ((oh - oh0) * MW + (ow - ow0)) * TC + tc;
      if (I(argmax[item]) == me) g += grad[item];
    }
  store_grad<Cfg::ACCUMULATE>(dx, X::at(n, c, ih, iw), g);
}

template <class Cfg> KILN_FN void maxpool2d_backward_tiled(const KernelArgs& a) {
  if constexpr (vec_of<Cfg>::value > 1)
    maxpool2d_backward_tiled_vec<Cfg>(a);
  else
    maxpool2d_backward_tiled_one<Cfg>(a);
}

template <class Cfg> KILN_FN void avgpool2d_backward(const KernelArgs& a) {
  using T = typename Cfg::T;
  using X = PoolX<Cfg>;
  using Y = PoolY<Cfg>;
  using I = typename X::index;
  const Global<const T> dy = arg<const T>(a, 0);
  const Global<T> dx = arg<T>(a, 1);
  for (I i = grid_first<I, Cfg::THREADS>(); i < X::count; i += grid_step<I, Cfg::THREADS>()) {
    const Coord4<I> p = X::coord(i);
    const Cover ch = pool_cover<Cfg::KH, Cfg::SH, Cfg::PH, Cfg::OH>(p.h);
    const Cover cw = pool_cover<Cfg::KW, Cfg::SW, Cfg::PW, Cfg::OW>(p.w);
    const Global<const T> dyp = dy + Y::plane(p.n, p.c);
    float g = 0.f;
    for (int oh = ch.lo; oh < ch.hi; ++oh) {
      const Span h = pool_span<Cfg::KH, Cfg::SH, Cfg::PH, Cfg::PH_END, Cfg::H>(oh);
      for (int ow = cw.lo; ow < cw.hi; ++ow) {
        const Span w = pool_span<Cfg::KW, Cfg::SW, Cfg::PW, Cfg::PW_END, Cfg::W>(ow);
        g += to_float(dyp[I(oh) * Y::row + I(ow) * Y::col]) / pool_divisor<Cfg::COUNT_PAD>(h, w);
      }
    }
    store_grad<Cfg::ACCUMULATE>(dx, i, g);
  }
}

} // namespace kiln::pool
