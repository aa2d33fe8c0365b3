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
// Cfg: T, N, C, S, CHANNELS_LAST (true), COLS, THREADS (as batchnorm_train.cuh), CHUNKS (R);
//      partials: DY; forward_train_chunked: EPS, STATS; backward_chunked: EPS, ACCUMULATE;
//      partials with DY and backward_chunked: RELU_MASK (optional: dy masked by a fused relu's
//      output, batchnorm_train.cuh's masked_dy).
// Arguments, in order: partials: x, [dy] (DY), partial, [relu_y] (RELU_MASK);
//   forward_train_chunked: x, weight, bias, partial, y, [mean, invstd] (STATS), [residual]
//     (HAS_RESIDUAL);
//   backward_chunked: x, dy, weight, partial, dx, dweight, dbias, [relu_y] (RELU_MASK).
// Grid: ceil(C / COLS) x CHUNKS (blockIdx.y: the chunk).
#pragma once

#include "common/epilogue.cuh"
#include "dense/batchnorm_train.cuh"

namespace kiln::dense {

template <class Cfg> KILN_FN void batchnorm_partials(const KernelArgs& a) {
  using T = typename Cfg::T;
  using Ch = BnChannel<Cfg>;
  using I = typename Ch::I;
  static_assert(Cfg::CHANNELS_LAST, "chunks serve channels-last tensors");
  constexpr int NV = Cfg::DY ? 4 : 2;
  const Global<const T> x = arg<const T>(a, 0);
  const Global<float> part = arg<float>(a, Cfg::DY ? 2 : 1);
  KILN_SHARED_ARRAY(float, scratch, Ch::scratch_size(NV));
  const Ch ch(int(blockIdx.y), Cfg::CHUNKS);
  const float k = ch.valid ? to_float(x[ch.index(0)]) : 0.f;
  float v[NV] = {};
  ch.each([&](I i) {
    const float d = to_float(x[i]) - k;
    v[0] += d;
    v[1] += d * d;
    if constexpr (Cfg::DY) {
      const float g = masked_dy<Cfg>(a, arg<const T>(a, 1), 3, i);
      v[NV - 2] += g;
      v[NV - 1] += g * d;
    }
  });
  ch.totals(v, scratch);
  if (!ch.valid || ch.first() != ch.lo) return;
  for (int q = 0; q < NV; ++q)
    part[(int(blockIdx.y) * NV + q) * Cfg::C + ch.c] = v[q];
}

// The CHUNKS chunks' NV sums of the thread's channel, the same in every block.
template <class Cfg, int NV>
KILN_FN void chunk_totals(const BnChannel<Cfg>& ch, Global<const float> part, float (&t)[NV],
                          Shared<float> scratch) {
  constexpr int ROWS = Cfg::THREADS / Cfg::COLS;
  for (int q = 0; q < NV; ++q)
    t[q] = 0.f;
  if (ch.valid)
    for (int r = int(threadIdx.x) / Cfg::COLS; r < Cfg::CHUNKS; r += ROWS)
      for (int q = 0; q < NV; ++q)
        t[q] += part[(r * NV + q) * Cfg::C + ch.c];
  ch.totals(t, scratch);
}

// The epilogue fused after the normalisation (a training step's relu whose input nothing else
// reads, and the residual added before it: generator/rewrite/batchnorm_activation.cpp): the
// instance's epilogue constants (HAS_BIAS, HAS_RESIDUAL, RELU or ACT: common/epilogue.cuh)
// where it has them, else none; the residual the last argument, read at y's index.
template <class Cfg, class = void> struct bn_activation {
  template <class I> static KILN_FN float apply(const KernelArgs&, float v, I) { return v; }
};
template <class Cfg> struct bn_activation<Cfg, decltype(void(Cfg::HAS_BIAS))> {
  template <class I> static KILN_FN float apply(const KernelArgs& a, float v, I i) {
    return epilogue_of<Cfg>::apply(a, 0, Cfg::STATS ? 7 : 5, v, 0, i);
  }
};

template <class Cfg> KILN_FN void batchnorm_forward_train_chunked(const KernelArgs& a) {
  using T = typename Cfg::T;
  using Ch = BnChannel<Cfg>;
  using I = typename Ch::I;
  const Global<const T> x = arg<const T>(a, 0);
  const Global<const T> gamma = arg<const T>(a, 1), beta = arg<const T>(a, 2);
  const Global<const float> part = arg<const float>(a, 3);
  const Global<T> y = arg<T>(a, 4);
  KILN_SHARED_ARRAY(float, scratch, Ch::scratch_size(2));
  const Ch ch(int(blockIdx.y), Cfg::CHUNKS);
  float t[2];
  chunk_totals(ch, part, t, scratch);
  if (!ch.valid) return;
  const float dm = t[0] / float(Ch::M), mean = to_float(x[ch.index(0)]) + dm;
  const float var = fmaxf(t[1] / float(Ch::M) - dm * dm, 0.f);
  const float invstd = 1.f / sqrtf(var + Cfg::EPS);
  if (Cfg::STATS && blockIdx.y == 0 && ch.first() == ch.lo) {
    arg<T>(a, 5)[ch.c] = from_float<T>(mean);
    arg<T>(a, 6)[ch.c] = from_float<T>(invstd);
  }
  const float scale = to_float(gamma[ch.c]) * invstd, shift = to_float(beta[ch.c]);
  ch.each([&](I i) {
    y[i] = from_float<T>(bn_activation<Cfg>::apply(a, (to_float(x[i]) - mean) * scale + shift, i));
  });
}

template <class Cfg> KILN_FN void batchnorm_backward_chunked(const KernelArgs& a) {
  using T = typename Cfg::T;
  using Ch = BnChannel<Cfg>;
  const Global<const T> x = arg<const T>(a, 0);
  KILN_SHARED_ARRAY(float, scratch, Ch::scratch_size(4));
  const Ch ch(int(blockIdx.y), Cfg::CHUNKS);
  float t[4];
  chunk_totals(ch, arg<const float>(a, 3), t, scratch);
  if (!ch.valid) return;
  const float dm = t[0] / float(Ch::M), mean = to_float(x[ch.index(0)]) + dm;
  const float var = fmaxf(t[1] / float(Ch::M) - dm * dm, 0.f);
  const float invstd = 1.f / sqrtf(var + Cfg::EPS);
  // dweight and dbias once, by chunk 0's blocks.
  bn_backward_outputs<Cfg>(a, ch, 4, mean, invstd, t[2], (t[3] - dm * t[2]) * invstd,
                           blockIdx.y == 0);
}

} // namespace kiln::dense
