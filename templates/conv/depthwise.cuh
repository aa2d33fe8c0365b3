// Depthwise convolution (conv2d.forward with groups == C == O: one filter per channel) with
// the fused epilogue (common/epilogue.cuh), accumulated in fp32 whatever the storage type.
//
// Mobile networks spend most of their time here, and the direct conv serves it badly: a
// depthwise filter has KH * KW multiply-adds per output and no reduction over channels, so
// the work is all data movement. A block computes a TH x TW tile of output pixels for TC
// consecutive channels of one image: the input patch (tile + halo, zero outside the image)
// of those channels is staged in shared memory once, each thread keeps its channel's
// KH * KW weights in registers and computes P pixels of it.
// Thread mapping follows y's layout so that loads, shared reads and stores are
// consecutive across a warp: NHWC puts the channel fastest (a warp's lanes are TC
// consecutive channels of one pixel group), NCHW puts the pixel fastest (lanes are
// consecutive pixel groups of one channel).
//
// Cfg: T (element type: float, f16, bf16), N, C, H, W (input; O = G = C), OH, OW,
//      KH, KW, SH, SW, PH, PW, DH, DW, NHWC (layout of y and residual), X_NHWC (layout of x),
//      HAS_BIAS, HAS_RESIDUAL, RELU or ACT (+ ACT_P0, ACT_P1),
//      TH, TW (output tile), TC (channels per block), P (pixels per thread),
//      THREADS = TC * NP with NP = ceil(TH * TW / P) pixel groups.
// Weights: [C][1][KH][KW] (OIHW and OHWI are the same bytes when each group has one channel).
// Arguments, in order: x, w, [b], [residual], y.
// Grid: x = ceil(OH / TH) * ceil(OW / TW), y = ceil(C / TC), z = N. Block: THREADS x 1 x 1.
#pragma once

#include "common/epilogue.cuh"
#include "common/tensor4.cuh"

namespace kiln::conv {

template <class Cfg> KILN_FN void depthwise(const KernelArgs& a) {
  using T = typename Cfg::T;
  constexpr int KH = Cfg::KH, KW = Cfg::KW, KK = KH * KW;
  constexpr int TH = Cfg::TH, TW = Cfg::TW, TC = Cfg::TC, P = Cfg::P;
  constexpr int IHT = (TH - 1) * Cfg::SH + (KH - 1) * Cfg::DH + 1; // patch rows
  constexpr int IWT = (TW - 1) * Cfg::SW + (KW - 1) * Cfg::DW + 1; // patch columns
  constexpr int PATCH = IHT * IWT;
  constexpr int NP = Cfg::THREADS / TC; // pixel groups
  constexpr int TILES_W = ceil_div(Cfg::OW, TW);
  constexpr int THREADS = Cfg::THREADS;
  static_assert(NP * TC == THREADS && NP * P >= TH * TW, "THREADS = TC * NP covering the tile");
  constexpr i64 XE = i64(Cfg::N) * Cfg::C * Cfg::H * Cfg::W,
                YE = i64(Cfg::N) * Cfg::C * Cfg::OH * Cfg::OW;
  using I = index_t<(XE > YE ? XE : YE)>;
  using X = Tensor4<Cfg::X_NHWC, Cfg::N, Cfg::C, Cfg::H, Cfg::W, I>;
  using Y = Tensor4<Cfg::NHWC, Cfg::N, Cfg::C, Cfg::OH, Cfg::OW, I>;
  constexpr int kB = 2, kR = 2 + (Cfg::HAS_BIAS ? 1 : 0), kY = kR + (Cfg::HAS_RESIDUAL ? 1 : 0);

  const Global<const T> x = arg<const T>(a, 0);
  const Global<const T> w = arg<const T>(a, 1);
  // [patch position][channel] for NHWC, [channel][patch position] for NCHW: the order the
  // compute loop's lanes read (channel fastest, or position fastest).
  KILN_SHARED_ARRAY(float, xs, PATCH* TC);

  const int tile = int(blockIdx.x);
  const int oh0 = (tile / TILES_W) * TH, ow0 = (tile % TILES_W) * TW;
  const int c0 = int(blockIdx.y) * TC, n = int(blockIdx.z);
  const int t = int(threadIdx.x);
  const int cl = Cfg::NHWC ? t % TC : t / NP; // this thread's channel in the block
  const int pg = Cfg::NHWC ? t / TC : t % NP; // and its pixel group
  const int ih0 = oh0 * Cfg::SH - Cfg::PH, iw0 = ow0 * Cfg::SW - Cfg::PW;

  // The patch, read in the order x lies in memory (channel fastest for an NHWC x).
#pragma unroll 2
  for (int e = t; e < TC * PATCH; e += THREADS) {
    const int c = Cfg::X_NHWC ? e % TC : e / PATCH, q = Cfg::X_NHWC ? e / TC : e % PATCH;
    const int ih = ih0 + q / IWT, iw = iw0 + q % IWT;
    float v = 0.f;
    if (c0 + c < Cfg::C && ih >= 0 && ih < Cfg::H && iw >= 0 && iw < Cfg::W)
      v = to_float(x[X::at(I(n), c0 + c, ih, iw)]);
    xs[Cfg::NHWC ? q * TC + c : c * PATCH + q] = v;
  }
  const int c = c0 + cl;
  float wr[KK];
#pragma unroll
  for (int k = 0; k < KK; ++k)
    wr[k] = c < Cfg::C ? to_float(w[I(c) * KK + k]) : 0.f;
  sync_threads();
  if (c >= Cfg::C) return; // after the block's last barrier

#pragma unroll
  for (int i = 0; i < P; ++i) {
    const int p = pg + i * NP;
    const int oh = oh0 + p / TW, ow = ow0 + p % TW;
    if (p >= TH * TW || oh >= Cfg::OH || ow >= Cfg::OW) continue;
    const int base = (p / TW) * Cfg::SH * IWT + (p % TW) * Cfg::SW;
    float acc = 0.f;
#pragma unroll
    for (int kh = 0; kh < KH; ++kh)
#pragma unroll
      for (int kw = 0; kw < KW; ++kw) {
        const int q = base + kh * Cfg::DH * IWT + kw * Cfg::DW;
        const float xv = xs[Cfg::NHWC ? q * TC + cl : cl * PATCH + q];
        acc += xv * wr[kh * KW + kw];
      }
    const I at = Y::at(I(n), c, oh, ow);
    arg<T>(a, kY)[at] = from_float<T>(epilogue_of<Cfg>::apply(a, kB, kR, acc, c, at));
  }
}

} // namespace kiln::conv
