// Batchnorm in training mode over axis 1 of [N, C, *spatial]: the forward with batch
// statistics and the backward. Every channel is reduced by one block, in a fixed order (no
// atomics, no cross-block partials), so results are deterministic. Arithmetic in fp32.
//
//   forward_train: mean = sum x / M, var = sum (x - mean)^2 / M (biased; two passes, so no
//     cancellation), invstd = 1 / sqrt(var + eps), y = (x - mean) * invstd * weight + bias;
//     writes y, and mean and invstd when STATS (M = N * spatial).
//   backward: with xhat = (x - mean) * invstd, dbias = sum dy, dweight = sum dy * xhat,
//     dx = weight * invstd * (dy - dbias / M - xhat * dweight / M). With STATS, mean and
//     invstd are the saved ones; without, they are recomputed from x exactly as
//     forward_train computes them (with EPS). ACCUMULATE adds all three outputs to what
//     they hold.
//
// Cfg: T (element type), N, C, S (spatial size per (n, c); 1 for [N, C]), CHANNELS_LAST
//      (element (n, c, s) at (n*S + s)*C + c: nhwc and [N, C]; otherwise (n*C + c)*S + s),
//      COLS (threads per block sharing a row of positions: 1 for channel-major tensors, where
//      a block owns one channel; a power of two <= 32 for channels-last ones, where a block
//      owns COLS consecutive channels and thread t works on channel t % COLS), THREADS,
//      STATS (the step has mean and invstd), EPS, ACCUMULATE (backward).
// Arguments, in order (the bracketed pair only when STATS):
//   forward_train: x, weight, bias, y, [mean, invstd];
//   backward: x, dy, weight, [mean, invstd], dx, dweight, dbias.
// Grid: ceil(C / COLS) blocks of THREADS threads (blockIdx.x: the channel group).
#pragma once

#include "common/tensor4.cuh"
#include "dense/reduce.cuh"

namespace kiln::dense {

// VEC (optional; absent: 1): a thread's V consecutive channels of a channels-last tensor, read
// and written as one 16-byte pack (batchnorm_chunks.cuh's kernels; C a multiple of V, every
// tensor 16-byte aligned).
template <class Cfg, class = void> struct bn_vec { static constexpr int value = 1; };
template <class Cfg> struct bn_vec<Cfg, decltype(void(Cfg::VEC))> {
  static constexpr int value = Cfg::VEC;
};

// Where a block's threads find the elements of their channel: element j in [0, M) of the
// thread's channel is at index(j); a thread visits j = first(), first() + step, ... With
// VEC, the thread's V channels c .. c + V - 1 are consecutive from index(j).
template <class Cfg> struct BnChannel {
  static constexpr int M = Cfg::N * Cfg::S; // elements per channel
  static constexpr int ROWS = Cfg::THREADS / Cfg::COLS;
  static constexpr int V = bn_vec<Cfg>::value;
  static_assert(Cfg::CHANNELS_LAST || Cfg::COLS == 1,
                "channel-major tensors: one channel per block");
  static_assert(V == 1 || (Cfg::CHANNELS_LAST && Cfg::C % V == 0), "VEC: whole packs of a row");
  static_assert(Cfg::THREADS % 32 == 0 && Cfg::THREADS % Cfg::COLS == 0, "whole warps and rows");
  using I = index_t<(long long)Cfg::N * Cfg::C * Cfg::S>;
  int c;      // the thread's (first) channel
  bool valid; // c < C (a channels-last block's last group may be partial)
  int lo = 0, hi = M; // the rows (positions) the block walks: all, or one chunk's
  KILN_FN BnChannel() {
    const int t = int(threadIdx.x);
    c = (int(blockIdx.x) * Cfg::COLS + t % Cfg::COLS) * V;
    valid = c < Cfg::C;
  }
  // Chunk `chunk` of `chunks` (runtime/ops/batchnorm_chunks.hpp): ceil(M / chunks) rows each.
  KILN_FN BnChannel(int chunk, int chunks) : BnChannel() {
    const int rows = (M + chunks - 1) / chunks;
    lo = chunk * rows < M ? chunk * rows : M;
    hi = lo + rows < M ? lo + rows : M;
  }
  KILN_FN int first() const { return lo + int(threadIdx.x) / Cfg::COLS; }
  static constexpr int step = ROWS;
  KILN_FN I index(int j) const {
    if (Cfg::CHANNELS_LAST) return I(j) * Cfg::C + c; // j = n * S + s
    return (I(j / Cfg::S) * Cfg::C + c) * Cfg::S + j % Cfg::S;
  }
  // The channel totals of per-thread partial sums, in every thread of the channel.
  // scratch: scratch_size(NV) floats.
  static KILN_CONST int scratch_size(int nv) {
    return nv * (Cfg::COLS == 1 ? Cfg::THREADS / 32 : Cfg::THREADS);
  }
  template <int NV> KILN_FN void totals(float (&v)[NV], Shared<float> scratch) const {
    if constexpr (Cfg::COLS == 1)
      block_sums<Cfg::THREADS, NV>(v, scratch);
    else
      column_sums<Cfg::THREADS, Cfg::COLS, NV>(v, scratch);
  }
  // Walks the thread's share of its channel (nothing for a channel past C).
  template <class F> KILN_FN void each(F&& f) const {
    const int lim = valid ? hi : 0;
    for (int j = first(); j < lim; j += step)
      f(index(j));
  }
  // The same, B rows at a time: f(at, n) with the indices of a batch's rows, the first n of
  // them in range. A kernel loads every row of a batch before it stores any: its stores may
  // alias its loads for all the compiler knows, and one row's loads at a time leave too few
  // bytes in flight to cover DRAM latency (~0.3 of the bandwidth on an H200).
  template <int B, class F> KILN_FN void batches(F&& f) const {
    const int lim = valid ? hi : 0;
    for (int j = first(); j < lim; j += B * step) {
      I at[B];
      for (int u = 0; u < B; ++u)
        at[u] = j + u * step < lim ? index(j + u * step) : I(0);
      const int left = (lim - j + step - 1) / step;
      f(at, left < B ? left : B);
    }
  }
  // The channel's mean and 1 / sqrt(biased variance + EPS), two passes over x.
  template <class G>
  KILN_FN void statistics(G x, Shared<float> scratch, float& mean, float& invstd) const {
    float s[1] = {0.f};
    each([&](I i) { s[0] += to_float(x[i]); });
    totals(s, scratch);
    mean = s[0] / float(M);
    float q[1] = {0.f};
    each([&](I i) {
      const float d = to_float(x[i]) - mean;
      q[0] += d * d;
    });
    totals(q, scratch);
    invstd = 1.f / sqrtf(q[0] / float(M) + Cfg::EPS);
  }
};

template <class Cfg> KILN_FN void batchnorm_forward_train(const KernelArgs& a) {
  using T = typename Cfg::T;
  using Ch = BnChannel<Cfg>;
  using I = typename Ch::I;
  const Global<const T> x = arg<const T>(a, 0);
  const Global<const T> gamma = arg<const T>(a, 1), beta = arg<const T>(a, 2);
  const Global<T> y = arg<T>(a, 3);
  KILN_SHARED_ARRAY(float, scratch, Ch::scratch_size(1));
  const Ch ch;
  float mean, invstd;
  ch.statistics(x, scratch, mean, invstd);
  if (!ch.valid) return;
  if (Cfg::STATS && ch.first() == ch.lo) {
    arg<T>(a, 4)[ch.c] = from_float<T>(mean);
    arg<T>(a, 5)[ch.c] = from_float<T>(invstd);
  }
  const float scale = to_float(gamma[ch.c]) * invstd, shift = to_float(beta[ch.c]);
  ch.each([&](I i) { y[i] = from_float<T>((to_float(x[i]) - mean) * scale + shift); });
}

// RELU_MASK (optional; absent: false): the backward of a relu after the batchnorm fused in
// (generator/rewrite/batchnorm_relu_backward.cpp): dy counts where the relu's output, argument
// `mask` (relu_y), is above zero and is zero elsewhere, as relu.backward's dx would be.
template <class Cfg, class = void> struct relu_mask_of { static constexpr bool value = false; };
template <class Cfg> struct relu_mask_of<Cfg, decltype(void(Cfg::RELU_MASK))> {
  static constexpr bool value = Cfg::RELU_MASK;
};
// One element of dy so masked by its element of relu_y (read only with RELU_MASK).
template <class Cfg, class T> KILN_FN float relu_masked(T dy, T relu_y) {
  if constexpr (relu_mask_of<Cfg>::value)
    if (to_float(relu_y) <= 0.f) return 0.f;
  return to_float(dy);
}
template <class Cfg, class I>
KILN_FN float masked_dy(const KernelArgs& a, Global<const typename Cfg::T> dy, int mask, I i) {
  using T = typename Cfg::T;
  return relu_masked<Cfg, T>(dy[i], relu_mask_of<Cfg>::value ? T(arg<const T>(a, mask)[i]) : T{});
}

// Rows a thread loads before it uses them (BnChannel::batches): with 16-byte packs, 64 bytes a
// tensor in flight per thread.
constexpr int kBnBatch = 4;

// The V channels' elements of a row as one pack, argument k seen as packs, and a pack's floats.
template <class Cfg> using BnPack = Pack<typename Cfg::T, BnChannel<Cfg>::V>;
template <class Cfg> KILN_FN Global<const BnPack<Cfg>> bn_packs(const KernelArgs& a, int k) {
  return view_as<const BnPack<Cfg>>(arg<const typename Cfg::T>(a, k));
}
template <class T, int V> KILN_FN void unpack(const Pack<T, V>& p, float (&f)[V]) {
  for (int e = 0; e < V; ++e)
    f[e] = to_float(p.e[e]);
}

// The backward's outputs from its V channels' statistics and sums (sdy = sum dy, dg = sum dy *
// xhat): dweight and dbias by the thread of the block's first row where `params`, then dx over
// the block's rows. Arguments x, dy, weight first; dx, dweight, dbias from `out` on, then
// relu_y (RELU_MASK).
template <class Cfg, int V>
KILN_FN void bn_backward_outputs(const KernelArgs& a, const BnChannel<Cfg>& ch, int out,
                                 const float (&mean)[V], const float (&invstd)[V],
                                 const float (&sdy)[V], const float (&dg)[V], bool params) {
  using T = typename Cfg::T;
  using Ch = BnChannel<Cfg>;
  using I = typename Ch::I;
  using P = BnPack<Cfg>;
  static_assert(V == Ch::V, "one value per channel of the thread");
  constexpr int M = Ch::M, B = kBnBatch;
  constexpr bool MASK = relu_mask_of<Cfg>::value;
  const Global<T> dgamma = arg<T>(a, out + 1), dbeta = arg<T>(a, out + 2);
  const Global<const T> gamma = arg<const T>(a, 2);
  float k[V], mdy[V], mdg[V];
  for (int e = 0; e < V; ++e) {
    const int c = ch.c + e;
    if (params && ch.first() == ch.lo) {
      dgamma[c] = from_float<T>(Cfg::ACCUMULATE ? to_float(dgamma[c]) + dg[e] : dg[e]);
      dbeta[c] = from_float<T>(Cfg::ACCUMULATE ? to_float(dbeta[c]) + sdy[e] : sdy[e]);
    }
    k[e] = to_float(gamma[c]) * invstd[e];
    mdy[e] = sdy[e] / float(M);
    mdg[e] = dg[e] / float(M);
  }
  const Global<const P> x = bn_packs<Cfg>(a, 0), dy = bn_packs<Cfg>(a, 1);
  const Global<P> dx = view_as<P>(arg<T>(a, out));
  ch.template batches<B>([&](const I(&at)[B], int n) {
    P xv[B], dv[B], mv[B] = {}, av[B]; // mv loaded with RELU_MASK only
    for (int u = 0; u < B; ++u)
      if (u < n) {
        xv[u] = x[at[u] / V];
        dv[u] = dy[at[u] / V];
        if constexpr (MASK) mv[u] = bn_packs<Cfg>(a, out + 3)[at[u] / V];
        if constexpr (Cfg::ACCUMULATE) av[u] = dx[at[u] / V];
      }
    for (int u = 0; u < B; ++u)
      if (u < n) {
        P o;
        for (int e = 0; e < V; ++e) {
          const float xhat = (to_float(xv[u].e[e]) - mean[e]) * invstd[e];
          float v = k[e] * (relu_masked<Cfg>(dv[u].e[e], mv[u].e[e]) - mdy[e] - xhat * mdg[e]);
          if (Cfg::ACCUMULATE) v += to_float(av[u].e[e]);
          o.e[e] = from_float<T>(v);
        }
        dx[at[u] / V] = o;
      }
  });
}

template <class Cfg> KILN_FN void batchnorm_backward(const KernelArgs& a) {
  using T = typename Cfg::T;
  using Ch = BnChannel<Cfg>;
  using I = typename Ch::I;
  constexpr int out = Cfg::STATS ? 5 : 3; // dx, dweight, dbias follow
  const Global<const T> x = arg<const T>(a, 0), dy = arg<const T>(a, 1);
  KILN_SHARED_ARRAY(float, scratch, Ch::scratch_size(2));
  const Ch ch;
  float mean = 0.f, invstd = 0.f;
  if constexpr (Cfg::STATS) {
    if (ch.valid)
      mean = to_float(arg<const T>(a, 3)[ch.c]), invstd = to_float(arg<const T>(a, 4)[ch.c]);
  } else {
    ch.statistics(x, scratch, mean, invstd);
  }
  float sums[2] = {0.f, 0.f}; // sum dy, sum dy * (x - mean)
  ch.each([&](I i) {
    const float d = masked_dy<Cfg>(a, dy, out + 3, i);
    sums[0] += d;
    sums[1] += d * (to_float(x[i]) - mean);
  });
  ch.totals(sums, scratch);
  if (!ch.valid) return;
  const float m[1] = {mean}, is[1] = {invstd}, sdy[1] = {sums[0]}, dg[1] = {sums[1] * invstd};
  bn_backward_outputs<Cfg>(a, ch, out, m, is, sdy, dg, true);
}

} // namespace kiln::dense
