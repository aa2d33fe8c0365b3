// Channels-last batchnorm in training over many blocks per channel group: a block owns COLS
// channels of one chunk of rows (runtime/ops/batchnorm_chunks.hpp), so a layer with few
// channels still fills the GPU. batchnorm.partials writes each chunk's sums, shifted by the
// channel's element at row 0; the forward_train or backward after it adds the CHUNKS chunks'
// sums in the same fixed order in every block (each thread a strided set of chunks, then
// column sums in row order: no atomics, deterministic), derives the statistics and
// normalises its own chunk. Arithmetic in fp32.
//
//   partials: partial[r][0][c] = sum (x - K), [1] = sum (x - K)^2; with DY also
//     [2] = sum dy, [3] = sum dy * (x - K) (K = x at row 0 of channel c).
//   forward_train_chunked: mean = K + t0 / M, var = t1 / M - (t0 / M)^2 (biased),
//     invstd = 1 / sqrt(var + EPS), y = (x - mean) * invstd * weight + bias; chunk 0's
//     blocks write mean and invstd when STATS.
//   backward_chunked: with the same mean and invstd, dbias = t2, dweight = (t3 - t0 / M * t2)
//     * invstd (written by chunk 0's blocks), dx as batchnorm_backward (batchnorm_train.cuh).
//
// Every thread loads kBnBatch rows of its channels before it uses them (BnChannel::batches), as
// V-channel packs (VEC: 16 bytes; else one element).
//
// Cfg: T, N, C, S, CHANNELS_LAST (true), COLS, THREADS, VEC (optional; as batchnorm_train.cuh),
//      CHUNKS (R); partials: DY; forward_train_chunked: EPS, STATS; backward_chunked: EPS,
//      ACCUMULATE; partials with DY and backward_chunked: RELU_MASK (optional: dy counted where
//      a fused relu's output is above zero, zero elsewhere, as batchnorm_train.cuh's masked_dy).
// Arguments, in order: partials: x, [dy] (DY), partial, [relu_y] (RELU_MASK);
//   forward_train_chunked: x, weight, bias, partial, y, [mean, invstd] (STATS), [residual]
//     (HAS_RESIDUAL);
//   backward_chunked: x, dy, weight, partial, dx, dweight, dbias, [relu_y] (RELU_MASK).
// Grid: ceil(C / (COLS * VEC)) x CHUNKS (blockIdx.y: the chunk).
#pragma once

#include "common/epilogue.cuh"
#include "dense/batchnorm_train.cuh"

namespace kiln::dense {

template <class Cfg> KILN_FN void batchnorm_partials(const KernelArgs& a) {
  using Ch = BnChannel<Cfg>;
  using I = typename Ch::I;
  using P = BnPack<Cfg>;
  static_assert(Cfg::CHANNELS_LAST, "chunks serve channels-last tensors");
  constexpr int V = Ch::V, NV = Cfg::DY ? 4 : 2, B = kBnBatch;
  constexpr bool MASK = relu_mask_of<Cfg>::value;
  const Global<const P> x = bn_packs<Cfg>(a, 0);
  const Global<float> part = arg<float>(a, Cfg::DY ? 2 : 1);
  KILN_SHARED_ARRAY(float, scratch, Ch::scratch_size(NV * V));
  const Ch ch(int(blockIdx.y), Cfg::CHUNKS);
  float k[V] = {};
  if (ch.valid) unpack(x[ch.index(0) / V], k);
  float v[NV * V] = {}; // sum q of channel c + e at q * V + e
  ch.template batches<B>([&](const I(&at)[B], int n) {
    P xv[B], dv[B], mv[B] = {}; // mv loaded with RELU_MASK only
    for (int u = 0; u < B; ++u)
      if (u < n) {
        xv[u] = x[at[u] / V];
        if constexpr (Cfg::DY) dv[u] = bn_packs<Cfg>(a, 1)[at[u] / V];
        if constexpr (MASK) mv[u] = bn_packs<Cfg>(a, 3)[at[u] / V];
      }
    for (int u = 0; u < B; ++u)
      if (u < n)
        for (int e = 0; e < V; ++e) {
          const float d = to_float(xv[u].e[e]) - k[e];
          v[e] += d;
          v[V + e] += d * d;
          if constexpr (Cfg::DY) {
            const float g = relu_masked<Cfg>(dv[u].e[e], mv[u].e[e]);
            v[2 * V + e] += g;
            v[3 * V + e] += g * d;
          }
        }
  });
  ch.totals(v, scratch);
  if (!ch.valid || ch.first() != ch.lo) return;
  for (int q = 0; q < NV; ++q)
    for (int e = 0; e < V; ++e)
      part[(int(blockIdx.y) * NV + q) * Cfg::C + ch.c + e] = v[q * V + e];
}

// The CHUNKS chunks' NV sums of the thread's V channels (sum q of channel c + e at q * V + e),
// the same in every block.
template <class Cfg, int NV, int W>
KILN_FN void chunk_totals(const BnChannel<Cfg>& ch, Global<const float> part, float (&t)[W],
                          Shared<float> scratch) {
  constexpr int ROWS = Cfg::THREADS / Cfg::COLS, V = BnChannel<Cfg>::V;
  static_assert(W == NV * V, "NV sums of V channels");
  for (int q = 0; q < W; ++q)
    t[q] = 0.f;
  if (ch.valid)
    for (int r = int(threadIdx.x) / Cfg::COLS; r < Cfg::CHUNKS; r += ROWS)
      for (int q = 0; q < NV; ++q)
        for (int e = 0; e < V; ++e)
          t[q * V + e] += part[(r * NV + q) * Cfg::C + ch.c + e];
  ch.totals(t, scratch);
}

// The channel's statistics from its chunk sums t0 = sum (x - K) and t1 = sum (x - K)^2 (K, x at
// row 0): dm = t0 / M, mean = K + dm, and invstd.
template <class Cfg> struct BnStats {
  float dm, mean, invstd;
  KILN_FN BnStats(float k, float t0, float t1) {
    constexpr float M = float(BnChannel<Cfg>::M);
    dm = t0 / M;
    mean = k + dm;
    invstd = 1.f / sqrtf(fmaxf(t1 / M - dm * dm, 0.f) + Cfg::EPS);
  }
};

// The epilogue fused after the normalisation (a training step's relu whose input nothing else
// reads, and the residual added before it: generator/rewrite/batchnorm_activation.cpp): the
// instance's epilogue constants (HAS_BIAS false, HAS_RESIDUAL, RELU or ACT:
// common/epilogue.cuh) where it has them, else none; the residual is the last argument.
template <class Cfg, class = void> struct bn_activation {
  static constexpr bool residual = false;
  static KILN_FN float apply(float v, float) { return v; }
};
template <class Cfg> struct bn_activation<Cfg, decltype(void(Cfg::HAS_BIAS))> {
  static_assert(!Cfg::HAS_BIAS, "a batchnorm's epilogue has no bias");
  static constexpr bool residual = Cfg::HAS_RESIDUAL;
  static KILN_FN float apply(float v, float r) { return epilogue_of<Cfg>::apply(v, 0.f, r); }
};

template <class Cfg> KILN_FN void batchnorm_forward_train_chunked(const KernelArgs& a) {
  using T = typename Cfg::T;
  using Ch = BnChannel<Cfg>;
  using I = typename Ch::I;
  using P = BnPack<Cfg>;
  using E = bn_activation<Cfg>;
  constexpr int V = Ch::V, B = kBnBatch;
  const Global<const P> x = bn_packs<Cfg>(a, 0);
  const Global<const T> gamma = arg<const T>(a, 1), beta = arg<const T>(a, 2);
  const Global<P> y = view_as<P>(arg<T>(a, 4));
  KILN_SHARED_ARRAY(float, scratch, Ch::scratch_size(2 * V));
  const Ch ch(int(blockIdx.y), Cfg::CHUNKS);
  float t[2 * V];
  chunk_totals<Cfg, 2>(ch, arg<const float>(a, 3), t, scratch);
  if (!ch.valid) return;
  float k[V], mean[V], scale[V], shift[V];
  unpack(x[ch.index(0) / V], k);
  for (int e = 0; e < V; ++e) {
    const BnStats<Cfg> st(k[e], t[e], t[V + e]);
    const int c = ch.c + e;
    if (Cfg::STATS && blockIdx.y == 0 && ch.first() == ch.lo) {
      arg<T>(a, 5)[c] = from_float<T>(st.mean);
      arg<T>(a, 6)[c] = from_float<T>(st.invstd);
    }
    mean[e] = st.mean;
    scale[e] = to_float(gamma[c]) * st.invstd;
    shift[e] = to_float(beta[c]);
  }
  ch.template batches<B>([&](const I(&at)[B], int n) {
    P xv[B], rv[B];
    for (int u = 0; u < B; ++u)
      if (u < n) {
        xv[u] = x[at[u] / V];
        if constexpr (E::residual) rv[u] = bn_packs<Cfg>(a, Cfg::STATS ? 7 : 5)[at[u] / V];
      }
    for (int u = 0; u < B; ++u)
      if (u < n) {
        P o;
        for (int e = 0; e < V; ++e)
          o.e[e] = from_float<T>(E::apply((to_float(xv[u].e[e]) - mean[e]) * scale[e] + shift[e],
                                          E::residual ? to_float(rv[u].e[e]) : 0.f));
        y[at[u] / V] = o;
      }
  });
}

template <class Cfg> KILN_FN void batchnorm_backward_chunked(const KernelArgs& a) {
  using Ch = BnChannel<Cfg>;
  constexpr int V = Ch::V;
  KILN_SHARED_ARRAY(float, scratch, Ch::scratch_size(4 * V));
  const Ch ch(int(blockIdx.y), Cfg::CHUNKS);
  float t[4 * V];
  chunk_totals<Cfg, 4>(ch, arg<const float>(a, 3), t, scratch);
  if (!ch.valid) return;
  float k[V], mean[V], invstd[V], sdy[V], dg[V];
  unpack(bn_packs<Cfg>(a, 0)[ch.index(0) / V], k);
  for (int e = 0; e < V; ++e) {
    const BnStats<Cfg> st(k[e], t[e], t[V + e]);
    mean[e] = st.mean;
    invstd[e] = st.invstd;
    sdy[e] = t[2 * V + e];
    dg[e] = (t[3 * V + e] - st.dm * t[2 * V + e]) * st.invstd;
  }
  // dweight and dbias once, by chunk 0's blocks.
  bn_backward_outputs<Cfg>(a, ch, 4, mean, invstd, sdy, dg, blockIdx.y == 0);
}

} // namespace kiln::dense
