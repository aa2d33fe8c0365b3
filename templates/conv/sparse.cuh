// Activation-sparse convolution (conv2d.forward_sparse): y = act(conv(x, w) + b + residual)
// (the fused epilogue, common/epilogue.cuh) from x's compacted form (runtime/sparse_form.hpp),
// multiplying nonzeros only; fp32 accumulation whatever the storage type. Any kernel size, stride,
// padding, dilation, groups.
//
// A block computes a TH x TW tile of output pixels of one image for TO output channels of one
// group. Its THREADS threads are PG pixel groups x NCO = TO / PO channel lanes; a thread owns
// P pixels (pg, pg + PG, ...) x PO channels (cq, cq + NCO, ...). The group's input channels
// go by in chunks of SC slices (KC = SC * CS channels): the chunk's weights ([tap][channel]
// [TO] floats) and the compacted units of the tile's input patch (counts, values, and each
// nonzero's channel within the chunk) are staged in shared memory; then every thread walks,
// for each of its pixels and each kernel tap, the nonzeros of the input pixel under the tap
// and adds value x weight for its channels. Lanes of one pixel group walk the same list
// (NCO >= 32 makes that a whole warp: no divergence) and read consecutive weights (no bank
// conflicts). Each output's sum runs in one fixed order (chunks, taps, slices, channels):
// results are bit-identical run to run; there are no atomics.
//
// With GUARD the kernel first reads the running nonzero count nnz and returns (writing
// nothing) when it exceeds THRESHOLD: the dense path computes y then (Guard::sparse).
//
// Cfg: T (float, f16, bf16), N, C, H, W, O, OH, OW, KH, KW, SH, SW, PH, PW, DH, DW, G,
//      CS (slice size of the form), NHWC (layout of y and residual), W_OHWI (w stored
//      [O][KH][KW][C/G]; false: OIHW), HAS_BIAS, HAS_RESIDUAL, RELU or ACT, GUARD, THRESHOLD,
//      TH, TW, TO, PO, P, SC (slices per chunk), THREADS = PG * (TO / PO), PG * P >= TH * TW.
// Arguments, in order: values, index, count, w, [b], [residual], [nnz] (GUARD), y,
//      [y_values, y_index, y_count, [y_nnz]] (COMPACT).
// Grid: x = ceil(OH / TH) * ceil(OW / TW), y = G * ceil((O / G) / TO), z = N.
// Dynamic shared memory: up16(4 * KH * KW * KC * TO) + 2 * up16(4 * UNITS * CS) + 4 * UNITS
//      bytes (up16: rounded up to a multiple of 16), UNITS = SC * ((TH - 1) * SH + (KH - 1) *
//      DH + 1) * ((TW - 1) * SW + (KW - 1) * DW + 1).
#pragma once

#include "conv/tile_epilogue.cuh"

namespace kiln::conv {

template <class Cfg> KILN_FN void sparse_forward(const KernelArgs& a) {
  using T = typename Cfg::T;
  constexpr int C = Cfg::C, Cg = C / Cfg::G, Og = Cfg::O / Cfg::G, CS = Cfg::CS;
  constexpr int SL = ceil_div(C, CS), SC = Cfg::SC, KC = SC * CS;
  constexpr int KH = Cfg::KH, KW = Cfg::KW, KK = KH * KW;
  constexpr int TH = Cfg::TH, TW = Cfg::TW, TO = Cfg::TO, PO = Cfg::PO, P = Cfg::P;
  constexpr int NCO = TO / PO, PG = Cfg::THREADS / NCO, THREADS = Cfg::THREADS;
  constexpr int IHT = (TH - 1) * Cfg::SH + (KH - 1) * Cfg::DH + 1;
  constexpr int IWT = (TW - 1) * Cfg::SW + (KW - 1) * Cfg::DW + 1;
  constexpr int PATCH = IHT * IWT, UNITS = PATCH * SC;
  constexpr int OT = ceil_div(Og, TO), TILES_W = ceil_div(Cfg::OW, TW);
  // Slices may straddle two groups' channels: entries of the other group are skipped.
  constexpr bool STRADDLE = Cfg::G > 1 && Cg % CS != 0;
  static_assert(TO % PO == 0 && PG * NCO == THREADS && PG * P >= TH * TW,
                "THREADS = PG * TO/PO with PG * P covering the tile");
  constexpr i64 PIX = i64(Cfg::N) * Cfg::H * Cfg::W, YE = i64(Cfg::N) * Cfg::O * Cfg::OH * Cfg::OW;
  using I = index_t<(PIX * SL * CS > YE ? PIX * SL * CS : YE) + i64(Cfg::O) * Cg * KK>;
  using Units =
      Tensor4<true, Cfg::N, SL, Cfg::H, Cfg::W, I>; // of the compacted form: [N, H, W, SL]

  constexpr int kB = 4, kR = kB + (Cfg::HAS_BIAS ? 1 : 0), kN = kR + (Cfg::HAS_RESIDUAL ? 1 : 0);
  constexpr int kY = kN + (Cfg::GUARD ? 1 : 0);
  if constexpr (Cfg::GUARD) {
    if (i64(arg<const int>(a, kN)[0]) > i64(Cfg::THRESHOLD)) return; // the dense path runs
  }
  const Global<const T> values = arg<const T>(a, 0);
  const Global<const u8> index = arg<const u8>(a, 1), count = arg<const u8>(a, 2);
  const Global<const T> w = arg<const T>(a, 3);

  // Dynamic shared memory, each array 16-byte aligned.
  constexpr int W_BYTES = (4 * KK * KC * TO + 15) / 16 * 16,
                E_BYTES = (4 * UNITS * CS + 15) / 16 * 16;
  const Shared<float> ws = dynamic_shared<float>(0);                 // [KK][KC][TO]
  const Shared<float> vs = dynamic_shared<float>(W_BYTES);           // [UNITS][CS] values
  const Shared<int> cs_ = dynamic_shared<int>(W_BYTES + E_BYTES);    // their chunk channel
  const Shared<int> ns = dynamic_shared<int>(W_BYTES + 2 * E_BYTES); // [UNITS] counts

  const int tile = int(blockIdx.x);
  const int oh0 = (tile / TILES_W) * TH, ow0 = (tile % TILES_W) * TW;
  const int g = int(blockIdx.y) / OT, o0 = (int(blockIdx.y) % OT) * TO;
  const int n = int(blockIdx.z);
  const int t = int(threadIdx.x), pg = t / NCO, cq = t % NCO;
  const int ih0 = oh0 * Cfg::SH - Cfg::PH, iw0 = ow0 * Cfg::SW - Cfg::PW;

  float acc[P][PO];
#pragma unroll
  for (int i = 0; i < P; ++i)
#pragma unroll
    for (int j = 0; j < PO; ++j)
      acc[i][j] = 0.f;

  // The slices holding this group's channels [g * Cg, (g + 1) * Cg).
  const int s_begin = g * Cg / CS, s_end = ceil_div((g + 1) * Cg, CS);
  for (int s0 = s_begin; s0 < s_end; s0 += SC) {
    // Weights of the chunk's channels (zero outside the group or past Og).
#pragma unroll 2
    for (int e = t; e < KK * KC * TO; e += THREADS) {
      const int o = e % TO, cl = (e / TO) % KC, k = e / (TO * KC);
      const int c = (s0 * CS + cl) - g * Cg; // channel within the group
      float v = 0.f;
      if (o0 + o < Og && c >= 0 && c < Cg) {
        const I oc = I(g) * Og + o0 + o;
        v = to_float(w[Cfg::W_OHWI ? (oc * KK + k) * Cg + c : (oc * Cg + c) * KK + k]);
      }
      ws[e] = v;
    }
    // Counts of the patch's units (zero outside the image or past the last slice).
    for (int u = t; u < UNITS; u += THREADS) {
      const int pp = u / SC, s = s0 + u % SC;
      const int ih = ih0 + pp / IWT, iw = iw0 + pp % IWT;
      int k = 0;
      if (s < s_end && ih >= 0 && ih < Cfg::H && iw >= 0 && iw < Cfg::W)
        k = count[Units::at(I(n), s, ih, iw)];
      ns[u] = k;
    }
    sync_threads();
    // Their nonzeros: values and channel within the chunk.
#pragma unroll 2
    for (int e = t; e < UNITS * CS; e += THREADS) {
      const int u = e / CS, k = e % CS;
      if (k >= ns[u]) continue;
      const int pp = u / SC, sl = u % SC;
      const int ih = ih0 + pp / IWT, iw = iw0 + pp % IWT;
      const I at = Units::at(I(n), s0 + sl, ih, iw) * CS + k;
      vs[e] = to_float(values[at]);
      cs_[e] = sl * CS + int(index[at]);
    }
    sync_threads();
#pragma unroll
    for (int i = 0; i < P; ++i) {
      const int p = pg + i * PG;
      if (p >= TH * TW) continue; // the same for every lane of the pixel group
      const int pr = (p / TW) * Cfg::SH, pc = (p % TW) * Cfg::SW;
#pragma unroll 1
      for (int kh = 0; kh < KH; ++kh)
#pragma unroll 1
        for (int kw = 0; kw < KW; ++kw) {
          const int pp = (pr + kh * Cfg::DH) * IWT + pc + kw * Cfg::DW;
          const int wrow = (kh * KW + kw) * KC;
#pragma unroll 1
          for (int sl = 0; sl < SC; ++sl) {
            const int u = pp * SC + sl, m = ns[u];
            for (int k = 0; k < m; ++k) {
              const float v = vs[u * CS + k];
              const int cl = cs_[u * CS + k];
              if (STRADDLE) {
                const int c = s0 * CS + cl - g * Cg;
                if (c < 0 || c >= Cg) continue;
              }
              const int wb = (wrow + cl) * TO + cq;
#pragma unroll
              for (int j = 0; j < PO; ++j)
                acc[i][j] += v * ws[wb + j * NCO];
            }
          }
        }
    }
    sync_threads();
  }

  conv_epilogue<Cfg, PG, NCO, P, PO, kB, kR, kY>(a, acc, n, g, oh0, ow0, o0, pg, cq);
}

} // namespace kiln::conv
