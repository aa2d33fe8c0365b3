// Weight gradient of a convolution from its compacted input (conv2d.backward_weight_sparse):
// dw[o][c][kh][kw] = sum over the nonzeros x[n][g*Cg + c][ih][iw] of x * dy[n][g*Og + o][oh][ow],
// (oh, ow) the output pixel whose tap (kh, kw) reads (ih, iw): oh = (ih + PH - kh * DH) / SH
// when that divides and lies in the output (likewise ow). fp32 accumulation.
//
// A block owns TO output channels x KC input channels (from c0, within one group) x KT kernel
// taps (all of them, or fewer for more blocks), and walks its range of the input's rows (all
// of them, or with SPLITS > 1 range s of SPLITS contiguous ranges of the N*H rows, whose sums
// go to partial[s] for partial.sum to add up) in tiles of up to RH x RW pixels, in a fixed
// order. Per tile it stages the pixels' compacted units, decompressed into a dense [RH * RW][KC]
// array (zeros, then the nonzeros of the block's channels), and the window of dy those pixels feed
// ([ORH][ORW][TO], zero outside the output). Warp w owns channels w * CPW .. w * CPW + CPW - 1
// of the block and lane l output channels l, l + 32, ... (PO of them); for every pixel a warp
// reads each of its channels' values (a broadcast) and, when it is nonzero (the same in every
// lane: no divergence), adds value x dy over the taps into its registers. Each dw element
// is summed by one thread in one fixed order: bit-identical run to run, no atomics.
//
// Cfg: T (float, f16, bf16), N, C, H, W (x), O, OH, OW (dy), KH, KW, SH, SW, PH, PW, DH, DW, G,
//      CS (slice size of the form), NHWC (dy's layout), W_OHWI (dw stored [O][KH][KW][C/G];
//      false: OIHW), ACCUMULATE (add into dw), GUARD, THRESHOLD (the sparse side of a dispatch:
//      return, writing nothing, when the running nonzero count nnz exceeds THRESHOLD), TO = 32 *
//      PO, PO, CPW, KT, RH, RW, SPLITS, THREADS (a multiple of 32); KC = CPW * THREADS / 32.
// Arguments, in order: values, index, count, dy, [nnz] (GUARD), dw (SPLITS == 1) or partial
//      (SPLITS > 1: float [SPLITS][O][C/G][KH][KW]).
// Grid: x = ceil((C / G) / KC), y = G * ceil((O / G) / TO), z = SPLITS * ceil(KH * KW / KT)
//      (z = split * ceil(KH * KW / KT) + tap group).
// Dynamic shared memory: up16(4 * RH * RW * KC) + 4 * ORH * ORW * TO bytes, ORH = (RH - 1 +
//      (KH - 1) * DH) / SH + 2, ORW = (RW - 1 + (KW - 1) * DW) / SW + 2.
#pragma once

#include "common/tensor4.cuh"

namespace kiln::conv {

// floor(a / b) for b > 0 and any a.
KILN_CONST int floor_div(int a, int b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

template <class Cfg> KILN_FN void sparse_backward_weight(const KernelArgs& a) {
  using T = typename Cfg::T;
  constexpr int C = Cfg::C, Cg = C / Cfg::G, Og = Cfg::O / Cfg::G, CS = Cfg::CS;
  constexpr int SL = ceil_div(C, CS);
  constexpr int KH = Cfg::KH, KW = Cfg::KW, KK = KH * KW;
  constexpr int TO = Cfg::TO, PO = Cfg::PO, CPW = Cfg::CPW, KT = Cfg::KT, THREADS = Cfg::THREADS;
  constexpr int NW = THREADS / 32, KC = CPW * NW;
  constexpr int RH = Cfg::RH, RW = Cfg::RW, RP = RH * RW;
  constexpr int ORH = (RH - 1 + (KH - 1) * Cfg::DH) / Cfg::SH + 2;
  constexpr int ORW = (RW - 1 + (KW - 1) * Cfg::DW) / Cfg::SW + 2;
  constexpr int OT = ceil_div(Og, TO);
  static_assert(TO == 32 * PO && THREADS % 32 == 0, "lanes own output channels l + 32 j");
  constexpr i64 PIX = i64(Cfg::N) * Cfg::H * Cfg::W, YE = i64(Cfg::N) * Cfg::O * Cfg::OH * Cfg::OW;
  using I =
      index_t<(PIX * SL * CS > YE ? PIX * SL * CS : YE) + i64(Cfg::SPLITS) * Cfg::O * Cg * KK>;
  using Units =
      Tensor4<true, Cfg::N, SL, Cfg::H, Cfg::W, I>; // of the compacted form: [N, H, W, SL]
  using DY = Tensor4<Cfg::NHWC, Cfg::N, Cfg::O, Cfg::OH, Cfg::OW, I>;

  if constexpr (Cfg::GUARD) {
    if (i64(arg<const int>(a, 4)[0]) > i64(Cfg::THRESHOLD)) return; // the dense path runs
  }
  const Global<const T> values = arg<const T>(a, 0);
  const Global<const u8> index = arg<const u8>(a, 1), count = arg<const u8>(a, 2);
  const Global<const T> dy = arg<const T>(a, 3);
  constexpr int SPLITS = Cfg::SPLITS, KTILES = ceil_div(KK, KT);
  constexpr int ROWS = Cfg::N * Cfg::H; // the input's rows, n * H + h
  const int split = int(blockIdx.z) / KTILES;
  const int r_begin = int(i64(split) * ROWS / SPLITS), r_end = int(i64(split + 1) * ROWS / SPLITS);

  constexpr int X_BYTES = (4 * RP * KC + 15) / 16 * 16;
  const Shared<float> xs = dynamic_shared<float>(0);       // [RP][KC], dense
  const Shared<float> ds = dynamic_shared<float>(X_BYTES); // [ORH][ORW][TO]

  const int c0 = int(blockIdx.x) * KC;          // within the group
  const int k0 = int(blockIdx.z) % KTILES * KT; // the block's first tap
  const int g = int(blockIdx.y) / OT, o0 = (int(blockIdx.y) % OT) * TO;
  const int t = int(threadIdx.x), lane = t & 31, warp = t >> 5;
  const int cbase = g * Cg + c0; // the block's first channel of x
  const int s_first = cbase / CS, s_last = (min_of(cbase + KC, g * Cg + Cg) - 1) / CS;
  constexpr int SPAN = (KC + CS - 1) / CS + 1; // slices a block's channels can touch

  float acc[CPW][KT][PO];
#pragma unroll
  for (int q = 0; q < CPW; ++q)
#pragma unroll
    for (int k = 0; k < KT; ++k)
#pragma unroll
      for (int j = 0; j < PO; ++j)
        acc[q][k][j] = 0.f;

  for (int row = r_begin; row < r_end;) {
    // Tiles of up to RH rows of one image, within the block's range.
    const int n = row / Cfg::H, h0 = row % Cfg::H;
    const int rows = min_of(min_of(RH, Cfg::H - h0), r_end - row);
    row += rows;
    for (int w0 = 0; w0 < Cfg::W; w0 += RW) {
      const int ohb = floor_div(h0 + Cfg::PH - (KH - 1) * Cfg::DH, Cfg::SH);
      const int owb = floor_div(w0 + Cfg::PW - (KW - 1) * Cfg::DW, Cfg::SW);
      for (int e = t; e < RP * KC; e += THREADS)
        xs[e] = 0.f;
#pragma unroll 2
      for (int e = t; e < ORH * ORW * TO; e += THREADS) {
        int o, r, q;
        if (Cfg::NHWC) {
          o = e % TO, q = (e / TO) % ORW, r = e / (TO * ORW);
        } else {
          q = e % ORW, r = (e / ORW) % ORH, o = e / (ORW * ORH);
        }
        const int oh = ohb + r, ow = owb + q;
        float v = 0.f;
        if (o0 + o < Og && oh >= 0 && oh < Cfg::OH && ow >= 0 && ow < Cfg::OW) {
          const int oc = g * Og + o0 + o;
          v = to_float(dy[DY::at(I(n), oc, oh, ow)]);
        }
        ds[(r * ORW + q) * TO + o] = v;
      }
      sync_threads();
      // The tile's nonzeros of the block's channels, one unit per thread.
      for (int u = t; u < RP * SPAN; u += THREADS) {
        const int pix = u / SPAN, s = s_first + u % SPAN;
        const int ih = h0 + pix / RW, iw = w0 + pix % RW;
        if (s > s_last || pix / RW >= rows || iw >= Cfg::W) continue;
        const I unit = Units::at(I(n), s, ih, iw);
        const int m = count[unit];
        for (int k = 0; k < m; ++k) {
          const int c = s * CS + int(index[unit * CS + k]) - cbase;
          if (c >= 0 && c < KC && c0 + c < Cg) xs[pix * KC + c] = to_float(values[unit * CS + k]);
        }
      }
      sync_threads();
#pragma unroll 1
      for (int pix = 0; pix < RP; ++pix) {
        const int ih = h0 + pix / RW, iw = w0 + pix % RW;
#pragma unroll
        for (int q = 0; q < CPW; ++q) {
          const float v = xs[pix * KC + warp * CPW + q];
          if (v == 0.f) continue; // the same in every lane of the warp
#pragma unroll
          for (int tk = 0; tk < KT; ++tk) {
            const int k = k0 + tk, kh = k / KW, kw = k % KW;
            if (KT < KK && k >= KK) break; // the last block's taps run out
            const int nh = ih + Cfg::PH - kh * Cfg::DH, nw = iw + Cfg::PW - kw * Cfg::DW;
            if (nh < 0 || nh % Cfg::SH != 0 || nh / Cfg::SH >= Cfg::OH) continue;
            if (nw < 0 || nw % Cfg::SW != 0 || nw / Cfg::SW >= Cfg::OW) continue;
            const int base = ((nh / Cfg::SH - ohb) * ORW + nw / Cfg::SW - owb) * TO + lane;
#pragma unroll
            for (int j = 0; j < PO; ++j)
              acc[q][tk][j] += v * ds[base + j * 32];
          }
        }
      }
      sync_threads(); // xs and ds are restaged for the next tile
    }
  }

#pragma unroll
  for (int q = 0; q < CPW; ++q) {
    const int c = c0 + warp * CPW + q;
    if (c >= Cg) continue;
#pragma unroll
    for (int j = 0; j < PO; ++j) {
      const int o = o0 + lane + j * 32;
      if (o >= Og) continue;
      const I oc = I(g) * Og + o;
#pragma unroll
      for (int tk = 0; tk < KT; ++tk) {
        const int k = k0 + tk;
        if (KT < KK && k >= KK) break;
        const I at = Cfg::W_OHWI ? (oc * KK + k) * Cg + c : (oc * Cg + c) * KK + k;
        float v = acc[q][tk][j];
        if constexpr (SPLITS > 1) {
          arg<float>(a, Cfg::GUARD ? 5 : 4)[I(split) * (Cfg::O * Cg * KK) + at] = v;
        } else {
          const Global<T> dw = arg<T>(a, Cfg::GUARD ? 5 : 4);
          if (Cfg::ACCUMULATE) v += to_float(dw[at]);
          dw[at] = from_float<T>(v);
        }
      }
    }
  }
}

} // namespace kiln::conv
