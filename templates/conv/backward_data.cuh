// Input gradient of a convolution (conv2d.backward_data), NCHW or NHWC: dx = the transposed
// convolution of dy with w, as a gather (also conv_transpose2d.forward, which is this with its
// x as dy, its y as dx and its bias added: Cfg::BIAS): each dx element sums, in a fixed order, the
// dy[n][o][oh][ow] * w[o][c][kh][kw] whose window tap (kh, kw) read it
// (ih = oh * SH - PH + kh * DH, iw likewise). No atomics; deterministic. fp32 accumulation.
//
// Stride phases: dx rows ih = a (mod SH) take exactly the taps kh with
// (a + PH - kh * DH) = 0 (mod SH), kh = kh0, kh0 + KSH, ... (KSH = SH / gcd(SH, DH)), and
// consecutive such rows (ih, ih + SH) read consecutive dy rows. So a block works on one phase
// (a, b) of dx: a TH x TW tile of that phase's pixels (dx rows a + SH * i, columns
// b + SW * j) for TC input channels of one group of one image, which is a stride-1
// correlation of dy with the phase's taps: no tap is visited in vain. It walks the group's
// output channels OK at a time, staging the dy patch the tile reads (zero outside dy) and the
// weights of those channels for the tile's input channels in shared memory as floats; every
// thread accumulates P pixels x PC channels. A phase no tap reaches (possible when the
// dilation and the stride share a factor) gets zeros.
//
// Cfg: T (float, f16, bf16), N, C, H, W (dx), O, OH, OW (dy), KH, KW, SH, SW, PH, PW, DH, DW,
//      G (groups), ACCUMULATE (add into dx), TH, TW, TC (block tile: rows and columns of a
//      phase, channels within a group), OK (dy channels staged per step), P, PC (pixels and
//      channels per thread), THREADS = NP * (TC / PC) with NP >= ceil(TH * TW / P) pixel
//      groups (TC a multiple of PC; NP rounded up to make whole warps); optional BIAS (add
//      b[c] to each dx element; absent: false); optional NHWC (dy and dx NHWC, w OIHW as
//      ever; absent: false): dy staged channel-fastest and the block's threads laid out
//      channel-fastest, so consecutive threads load and store consecutive channels.
// Arguments, in order: dy, w, dx, [b].
// Grid: x = SH * SW phases * ceil(ceil(H / SH) / TH) * ceil(ceil(W / SW) / TW) tiles
//       (phase-major), y = G * ceil((C / G) / TC), z = N.
#pragma once

#include "common/tensor4.cuh"

namespace kiln::conv {

KILN_CONST int gcd_of(int a, int b) { return b == 0 ? a : gcd_of(b, a % b); }

// Cfg::BIAS where the instance names it, else false (conv2d.backward_data's instances).
template <class Cfg, class = void> struct BiasOf { static constexpr bool value = false; };
template <class Cfg> struct BiasOf<Cfg, decltype(void(Cfg::BIAS))> {
  static constexpr bool value = Cfg::BIAS;
};

// The taps of one dimension that reach dx positions of phase `a`: kh = first + m * step for
// m < count, and how far apart (in dy rows) consecutive taps read.
template <int K, int S, int P, int D> struct PhaseTaps {
  static constexpr int step = S / gcd_of(S, D);   // KSH
  static constexpr int spread = D / gcd_of(S, D); // dy rows between consecutive taps
  static constexpr int max_count = (K + step - 1) / step;
  int first, count, offset; // offset: (a + P - first * D) / S, the first tap's dy row shift
  KILN_FN explicit PhaseTaps(int a) : first(0), count(0), offset(0) {
    for (int k = 0; k < step && k < K; ++k)
      if ((a + P - k * D) % S == 0) {
        first = k;
        count = (K - k + step - 1) / step;
        offset = (a + P - k * D) / S;
        return;
      }
  }
};

template <class Cfg> KILN_FN void backward_data(const KernelArgs& a) {
  using T = typename Cfg::T;
  constexpr int Cg = Cfg::C / Cfg::G, Og = Cfg::O / Cfg::G;
  constexpr int KH = Cfg::KH, KW = Cfg::KW, KK = KH * KW, SH = Cfg::SH, SW = Cfg::SW;
  constexpr int TH = Cfg::TH, TW = Cfg::TW, TC = Cfg::TC, OK = Cfg::OK;
  constexpr int P = Cfg::P, PC = Cfg::PC;
  using TapsH = PhaseTaps<KH, SH, Cfg::PH, Cfg::DH>;
  using TapsW = PhaseTaps<KW, SW, Cfg::PW, Cfg::DW>;
  // The dy patch of a tile: its rows plus the spread of the phase's taps.
  constexpr int PHT = TH + (TapsH::max_count - 1) * TapsH::spread;
  constexpr int PWT = TW + (TapsW::max_count - 1) * TapsW::spread;
  constexpr int PATCH = PHT * PWT;
  constexpr int NCC = TC / PC;
  constexpr int NP = Cfg::THREADS / NCC;
  constexpr int CT = ceil_div(Cg, TC);
  constexpr int TILES_H = ceil_div(ceil_div(Cfg::H, SH), TH);
  constexpr int TILES_W = ceil_div(ceil_div(Cfg::W, SW), TW);
  constexpr int THREADS = Cfg::THREADS;
  static_assert(TC % PC == 0 && NP * NCC == THREADS && NP * P >= TH * TW,
                "THREADS = NP * TC/PC with NP * P covering the tile");
  constexpr i64 XE = i64(Cfg::N) * Cfg::C * Cfg::H * Cfg::W;
  constexpr i64 YE = i64(Cfg::N) * Cfg::O * Cfg::OH * Cfg::OW;
  using I = index_t<(XE > YE ? XE : YE) + i64(Cfg::O) * Cg * KK>; // offsets into dx, dy, w
  constexpr bool NHWC = NhwcOf<Cfg>::value;
  using DX = Tensor4<NHWC, Cfg::N, Cfg::C, Cfg::H, Cfg::W, I>;
  using DY = Tensor4<NHWC, Cfg::N, Cfg::O, Cfg::OH, Cfg::OW, I>;

  const Global<const T> dy = arg<const T>(a, 0);
  const Global<const T> w = arg<const T>(a, 1);
  const Global<T> dx = arg<T>(a, 2);
  constexpr bool BIAS = BiasOf<Cfg>::value;

  constexpr int PATCH_ELEMS = OK * PATCH, W_ELEMS = OK * KK * TC;
  KILN_SHARED_ARRAY(float, ds, PATCH_ELEMS); // [o][patch row][patch column]
  KILN_SHARED_ARRAY(float, ws, W_ELEMS);     // [o][kh * KW + kw][c]

  const int phase = int(blockIdx.x) / (TILES_H * TILES_W),
            tile = int(blockIdx.x) % (TILES_H * TILES_W);
  const int pa = phase / SW, pb = phase % SW;                           // dx row / column phase
  const int i0 = (tile / TILES_W) * TH, j0 = (tile % TILES_W) * TW;     // in phase rows / columns
  const int g = int(blockIdx.y) / CT, c0 = (int(blockIdx.y) % CT) * TC; // c0: within the group
  const int n = int(blockIdx.z);
  const int t = int(threadIdx.x);
  // NCHW: consecutive threads take consecutive pixels; NHWC: consecutive channels.
  const int pg = NHWC ? t / NCC : t % NP, cq = NHWC ? t % NCC : t / NP;
  const TapsH th(pa);
  const TapsW tw(pb);
  // dy row of patch row 0: tile row r and tap m read dy row i0 + r + offset - m * spread.
  const int oh_lo = i0 + th.offset - (th.count - 1) * TapsH::spread;
  const int ow_lo = j0 + tw.offset - (tw.count - 1) * TapsW::spread;

  // Where each of this thread's pixels reads the patch for the phase's last tap (pixels past
  // the tile's end compute on pixel 0 and are never stored).
  int base[P];
#pragma unroll
  for (int i = 0; i < P; ++i) {
    const int p = pg + i * NP < TH * TW ? pg + i * NP : 0;
    base[i] = (p / TW) * PWT + p % TW;
  }
  float acc[P][PC];
#pragma unroll
  for (int i = 0; i < P; ++i)
#pragma unroll
    for (int j = 0; j < PC; ++j)
      acc[i][j] = 0.f;

  // No tap reaches this phase: nothing to gather (the condition is the block's own).
  const int reduce = th.count > 0 && tw.count > 0 ? Og : 0;
  for (int k0 = 0; k0 < reduce; k0 += OK) {
#pragma unroll 2
    for (int e = t; e < OK * PATCH; e += THREADS) {
      // NHWC reads a pixel's OK channels together (o fastest).
      const int o = NHWC ? e % OK : e / PATCH;
      const int rq = NHWC ? e / OK : e % PATCH, r = rq / PWT, q = rq % PWT;
      const int oh = oh_lo + r, ow = ow_lo + q;
      float v = 0.f;
      if (k0 + o < Og && oh >= 0 && oh < Cfg::OH && ow >= 0 && ow < Cfg::OW)
        v = to_float(dy[DY::at(I(n), g * Og + k0 + o, oh, ow)]);
      ds[o * PATCH + rq] = v;
    }
#pragma unroll 2
    for (int e = t; e < OK * KK * TC; e += THREADS) {
      const int k = e % KK, c = (e / KK) % TC, o = e / (KK * TC);
      float v = 0.f;
      if (k0 + o < Og && c0 + c < Cg)
        v = to_float(w[((I(g) * Og + k0 + o) * Cg + c0 + c) * KK + k]);
      ws[(o * KK + k) * TC + c] = v;
    }
    sync_threads();
#pragma unroll 1
    for (int o = 0; o < OK; ++o)
#pragma unroll 1
      for (int mh = 0; mh < th.count; ++mh)
        for (int mw = 0; mw < tw.count; ++mw) {
          const int k = (th.first + mh * TapsH::step) * KW + tw.first + mw * TapsW::step;
          float wv[PC];
#pragma unroll
          for (int j = 0; j < PC; ++j)
            wv[j] = ws[(o * KK + k) * TC + cq + j * NCC];
          const int off = o * PATCH + (th.count - 1 - mh) * TapsH::spread * PWT +
                          (tw.count - 1 - mw) * TapsW::spread;
#pragma unroll
          for (int i = 0; i < P; ++i) {
            const float dv = ds[off + base[i]];
#pragma unroll
            for (int j = 0; j < PC; ++j)
              acc[i][j] += dv * wv[j];
          }
        }
    sync_threads();
  }

#pragma unroll
  for (int i = 0; i < P; ++i) {
    const int p = pg + i * NP;
    const int ih = pa + SH * (i0 + p / TW), iw = pb + SW * (j0 + p % TW);
    if (p >= TH * TW || ih >= Cfg::H || iw >= Cfg::W) continue;
#pragma unroll
    for (int j = 0; j < PC; ++j) {
      const int cg = c0 + cq + j * NCC;
      if (cg >= Cg) continue;
      const I at = DX::at(I(n), g * Cg + cg, ih, iw);
      float v = acc[i][j];
      if (BIAS) v += to_float(arg<const T>(a, 3)[g * Cg + cg]);
      if (Cfg::ACCUMULATE) v += to_float(dx[at]);
      dx[at] = from_float<T>(v);
    }
  }
}

} // namespace kiln::conv
