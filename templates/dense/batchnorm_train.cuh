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

// Where a block's threads find the elements of their channel: element j in [0, M) of the
// thread's channel is at index(j); a thread visits j = first(), first() + step, ...
template <class Cfg> struct BnChannel {
  static constexpr int M = Cfg::N * Cfg::S; // elements per channel
  static constexpr int ROWS = Cfg::THREADS / Cfg::COLS;
  static_assert(Cfg::CHANNELS_LAST || Cfg::COLS == 1,
                "channel-major tensors: one channel per block");
  static_assert(Cfg::THREADS % 32 == 0 && Cfg::THREADS % Cfg::COLS == 0, "whole warps and rows");
  using I = index_t<(long long)Cfg::N * Cfg::C * Cfg::S>;
  int c;      // the thread's channel
  bool valid; // c < C (a channels-last block's last group may be partial)
  int lo = 0, hi = M; // the rows (positions) the block walks: all, or one chunk's
  KILN_FN BnChannel() {
    const int t = int(threadIdx.x);
    c = int(blockIdx.x) * Cfg::COLS + t % Cfg::COLS;
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
template <class Cfg, class I>
KILN_FN float masked_dy(const KernelArgs& a, Global<const typename Cfg::T> dy, int mask, I i) {
  using T = typename Cfg::T;
  if constexpr (relu_mask_of<Cfg>::value)
    if (to_float(arg<const T>(a, mask)[i]) <= 0.f) return 0.f;
  return to_float(dy[i]);
}

// The backward's outputs from the channel's statistics and sums (sdy = sum dy, dg = sum dy *
// xhat): dweight and dbias by the thread of the block's first row where `params`, then dx over
// the block's rows. Arguments x, dy, weight first; dx, dweight, dbias from `out` on, then
// relu_y (RELU_MASK).
template <class Cfg>
KILN_FN void bn_backward_outputs(const KernelArgs& a, const BnChannel<Cfg>& ch, int out, float mean,
                                 float invstd, float sdy, float dg, bool params) {
  using T = typename Cfg::T;
  using I = typename BnChannel<Cfg>::I;
  constexpr int M = BnChannel<Cfg>::M;
  const Global<const T> x = arg<const T>(a, 0), dy = arg<const T>(a, 1);
  const Global<T> dx = arg<T>(a, out), dgamma = arg<T>(a, out + 1), dbeta = arg<T>(a, out + 2);
  if (params && ch.first() == ch.lo) {
    dgamma[ch.c] = from_float<T>(Cfg::ACCUMULATE ? to_float(dgamma[ch.c]) + dg : dg);
    dbeta[ch.c] = from_float<T>(Cfg::ACCUMULATE ? to_float(dbeta[ch.c]) + sdy : sdy);
  }
  const float k = to_float(arg<const T>(a, 2)[ch.c]) * invstd;
  const float mdy = sdy / float(M), mdg = dg / float(M);
  ch.each([&](I i) {
    const float xhat = (to_float(x[i]) - mean) * invstd;
    float v = k * (masked_dy<Cfg>(a, dy, out + 3, i) - mdy - xhat * mdg);
    if (Cfg::ACCUMULATE) v += to_float(dx[i]);
    dx[i] = from_float<T>(v);
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
  bn_backward_outputs<Cfg>(a, ch, out, mean, invstd, sums[0], sums[1] * invstd, true);
}

} // namespace kiln::dense
