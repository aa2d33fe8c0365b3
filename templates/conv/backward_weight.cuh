// Weight gradient of a convolution (conv2d.backward_weight), NCHW or NHWC (x and dy alike;
// dw OIHW):
// dw[o][c][kh][kw] = sum over n, oh, ow of dy[n][o][oh][ow] * x[n][g*Cg + c][ih][iw]
// (ih = oh * SH - PH + kh * DH, iw likewise; zero outside x). fp32 accumulation.
//
// Per group, a GEMM: dw_g [Og x K] = dy_g [Og x R] * cols [R x K] with K = Cg * KH * KW and
// R = N * OH * OW. A block owns a TO x TK tile of dw and reduces over all of R by itself
// (no atomics are used), or with SLICES > 1 its slice z = blockIdx.z of R,
// [z * R / SLICES, (z + 1) * R / SLICES), writing its fp32 slice of `partial`
// ([SLICES][O][Cg][KH][KW]; partial.sum adds them in slice order): a layer whose dw has few
// tiles (a stem's 64 x 147) fills the GPU. R is walked in chunks of RC positions; each chunk's dy
// values and gathered input columns (im2col, zero padding) are staged in shared memory; the block's
// threads form S slices, slice s taking positions s, s + S, ... of every chunk for its PO x PK
// micro-tile. At the end the S partial tiles are summed in slice order. The order of every sum is
// fixed: results are deterministic.
//
// Cfg: T (float, f16, bf16), N, C, H, W (x), O, OH, OW (dy), KH, KW, SH, SW, PH, PW, DH, DW,
//      G (groups), ACCUMULATE (add into dw), GUARD, THRESHOLD (the dense side of a sparse
//      dispatch: return unless the running nonzero count nnz of x exceeds THRESHOLD),
//      TO, TK (tile, TO % PO == 0, TK % PK == 0),
//      PO, PK (micro-tile), S (slices), RC (positions per chunk, a multiple of S),
//      THREADS = (TO / PO) * (TK / PK) * S; optional NHWC (x and dy channels-last; staging
//      then walks channels fastest, so a warp's loads are contiguous); optional SLICES
//      (above; absent: 1, dw written as T).
// Arguments, in order: x, dy, [nnz] (GUARD), dw (SLICES > 1: partial, fp32).
// Grid: x = ceil(K / TK), y = G * ceil((O / G) / TO), z = SLICES.
#pragma once

#include "common/tensor4.cuh"

namespace kiln::conv {

// Cfg::SLICES where an instance names it, else 1 (the whole reduction, dw).
template <class Cfg, class = void> struct slices_of { static constexpr int value = 1; };
template <class Cfg> struct slices_of<Cfg, decltype(void(Cfg::SLICES))> {
  static constexpr int value = Cfg::SLICES;
};

template <class Cfg> KILN_FN void backward_weight(const KernelArgs& a) {
  using T = typename Cfg::T;
  constexpr int Cg = Cfg::C / Cfg::G, Og = Cfg::O / Cfg::G;
  constexpr int KW = Cfg::KW, KK = Cfg::KH * KW, K = Cg * KK;
  constexpr int TO = Cfg::TO, TK = Cfg::TK, PO = Cfg::PO, PK = Cfg::PK, S = Cfg::S;
  constexpr int RC = Cfg::RC, RCP = RC + 1; // odd pitch: a warp's rows fall in distinct banks
  constexpr int NTO = TO / PO, NTK = TK / PK, NT = NTO * NTK;
  constexpr int OT = ceil_div(Og, TO);
  constexpr i64 R = i64(Cfg::N) * Cfg::OH * Cfg::OW;
  constexpr int PLANE = Cfg::OH * Cfg::OW;
  constexpr int THREADS = Cfg::THREADS;
  constexpr int STAGE = (TO + TK) * RCP, PARTIAL = S * TO * TK;
  static_assert(TO % PO == 0 && TK % PK == 0 && RC % S == 0 && NT * S == THREADS,
                "THREADS = (TO/PO) * (TK/PK) * S");
  constexpr i64 XE = i64(Cfg::N) * Cfg::C * Cfg::H * Cfg::W, YE = i64(Cfg::N) * Cfg::O * PLANE;
  using I = index_t<(XE > YE ? XE : YE) + i64(slices_of<Cfg>::value) * Cfg::O * K +
                    RC>; // offsets, positions
  constexpr bool NHWC = NhwcOf<Cfg>::value;
  constexpr int SLICES = slices_of<Cfg>::value;
  constexpr bool SLICED = SLICES > 1;
  static_assert(!(SLICED && Cfg::ACCUMULATE), "a slice is written; partial.sum accumulates");
  using X = Tensor4<NHWC, Cfg::N, Cfg::C, Cfg::H, Cfg::W, I>;

  if constexpr (Cfg::GUARD) {
    if (i64(arg<const int>(a, 2)[0]) <= i64(Cfg::THRESHOLD)) return; // the sparse path runs
  }
  const Global<const T> x = arg<const T>(a, 0);
  const Global<const T> dy = arg<const T>(a, 1);
  using Out = typename pick<SLICED, float, T>::type;
  const Global<Out> dw = arg<Out>(a, Cfg::GUARD ? 3 : 2);
  // This block's positions: all of R, or its slice's.
  const I r_begin = I(i64(blockIdx.z) * R / SLICES), r_end = I(i64(blockIdx.z + 1) * R / SLICES);

  // Staging ([TO][RCP] dy, then [TK][RCP] columns) and, at the end, the partial tiles
  // ([S][TO][TK]) share one array.
  KILN_SHARED_ARRAY(float, sm, STAGE > PARTIAL ? STAGE : PARTIAL);

  const int k0 = int(blockIdx.x) * TK;
  const int g = int(blockIdx.y) / OT, o0 = (int(blockIdx.y) % OT) * TO; // o0: within the group
  const int t = int(threadIdx.x);
  const int tt = t % NT, s = t / NT;
  const int oq = tt % NTO, kq = tt / NTO; // rows oq + i * NTO, columns kq + j * NTK

  float acc[PO][PK];
#pragma unroll
  for (int i = 0; i < PO; ++i)
#pragma unroll
    for (int j = 0; j < PK; ++j)
      acc[i][j] = 0.f;

  for (I r0 = r_begin; r0 < r_end; r0 += RC) {
#pragma unroll 2
    for (int e = t; e < TO * RC; e += THREADS) {
      const int o = NHWC ? e % TO : e / RC, r = NHWC ? e / TO : e % RC;
      const I rg = r0 + r;
      float v = 0.f;
      if (rg < r_end && o0 + o < Og) {
        const I nn = rg / PLANE;
        const int pix = int(rg % PLANE);
        v = to_float(dy[NHWC ? (nn * PLANE + pix) * Cfg::O + g * Og + o0 + o
                             : (nn * Cfg::O + g * Og + o0 + o) * PLANE + pix]);
      }
      sm[o * RCP + r] = v;
    }
#pragma unroll 2
    for (int e = t; e < TK * RC; e += THREADS) {
      const int k = NHWC ? e % TK : e / RC, r = NHWC ? e / TK : e % RC;
      const I rg = r0 + r;
      const int kg = k0 + k;
      float v = 0.f;
      if (rg < r_end && kg < K) {
        const I nn = rg / PLANE;
        const int pix = int(rg % PLANE);
        const int c = kg / KK, kh = (kg % KK) / KW, kw = kg % KW;
        const int ih = (pix / Cfg::OW) * Cfg::SH - Cfg::PH + kh * Cfg::DH;
        const int iw = (pix % Cfg::OW) * Cfg::SW - Cfg::PW + kw * Cfg::DW;
        if (ih >= 0 && ih < Cfg::H && iw >= 0 && iw < Cfg::W)
          v = to_float(x[X::at(nn, g * Cg + c, ih, iw)]);
      }
      sm[(TO + k) * RCP + r] = v;
    }
    sync_threads();
#pragma unroll 4
    for (int r = s; r < RC; r += S) {
      float av[PO], bv[PK];
#pragma unroll
      for (int i = 0; i < PO; ++i)
        av[i] = sm[(oq + i * NTO) * RCP + r];
#pragma unroll
      for (int j = 0; j < PK; ++j)
        bv[j] = sm[(TO + kq + j * NTK) * RCP + r];
#pragma unroll
      for (int i = 0; i < PO; ++i)
#pragma unroll
        for (int j = 0; j < PK; ++j)
          acc[i][j] += av[i] * bv[j];
    }
    sync_threads();
  }

  // The S partial tiles, then their sum in slice order.
#pragma unroll
  for (int i = 0; i < PO; ++i)
#pragma unroll
    for (int j = 0; j < PK; ++j)
      sm[(s * TO + oq + i * NTO) * TK + kq + j * NTK] = acc[i][j];
  sync_threads();
  for (int e = t; e < TO * TK; e += THREADS) {
    const int o = e / TK, k = e % TK;
    if (o0 + o >= Og || k0 + k >= K) continue;
    float v = 0.f;
    for (int q = 0; q < S; ++q) {
      const float part = sm[(q * TO + o) * TK + k];
      v += part;
    }
    const I at = I(i64(blockIdx.z) * Cfg::O * K) + (I(g) * Og + o0 + o) * K + k0 + k;
    if (Cfg::ACCUMULATE) v += to_float(dw[at]);
    dw[at] = from_float<Out>(v);
  }
}

} // namespace kiln::conv
