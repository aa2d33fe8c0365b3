// A channels-last batchnorm's statistics over many blocks, deterministically: the rows
// (positions n * S + s, M of them) fall in R chunks of ceil(M / R) consecutive rows;
// batchnorm.partials writes each chunk's sums, and the forward_train or backward after it
// adds the R chunks' sums in chunk order (every block the same way) before it normalises its
// own chunk. Sums are shifted by the channel's first element K (x at row 0), so the variance's
// sum of squares does not cancel where the mean is far from zero:
//   partial[r][0][c] = sum (x - K), [1] = sum (x - K)^2, and with dy (the backward's)
//   [2] = sum dy, [3] = sum dy * (x - K), over chunk r's rows.
// From the totals: mean = K + t0 / M, var = t1 / M - (t0 / M)^2, and
// sum dy * (x - mean) = t3 - (t0 / M) * t2.
#pragma once

#include <algorithm>
#include <cstdint>

namespace kiln {

// Rows per chunk, and chunk r's first row (r = R gives M).
constexpr int64_t bn_chunk_rows(int64_t M, int64_t R) { return (M + R - 1) / R; }
constexpr int64_t bn_chunk_begin(int64_t M, int64_t R, int64_t r) {
  return std::min(M, r * bn_chunk_rows(M, R));
}
// Sums per chunk and channel: 2 (forward: x's), 4 (backward: x's and dy's).
constexpr int64_t bn_partial_sums(bool backward) { return backward ? 4 : 2; }

// The reference: partial [R, 2 (4 with dy), C] from x (and dy) [N, C, S] in NCHW order, in
// double. batchnorm.partials' CPU reference, and what a kernel check feeds a chunked step.
template <class T, class U>
void bn_chunk_sums(const T* x, const T* dy, int64_t N, int64_t C, int64_t S, int64_t R,
                   U* partial) {
  const int64_t M = N * S, V = bn_partial_sums(dy != nullptr);
  const auto at = [&](int64_t row, int64_t ch) { return (row / S * C + ch) * S + row % S; };
  for (int64_t ch = 0; ch < C; ++ch) {
    const double k = double(x[at(0, ch)]);
    for (int64_t r = 0; r < R; ++r) {
      double sum[4] = {0, 0, 0, 0};
      for (int64_t j = bn_chunk_begin(M, R, r); j < bn_chunk_begin(M, R, r + 1); ++j) {
        const double d = double(x[at(j, ch)]) - k;
        sum[0] += d;
        sum[1] += d * d;
        if (dy) {
          sum[2] += double(dy[at(j, ch)]);
          sum[3] += double(dy[at(j, ch)]) * d;
        }
      }
      for (int64_t v = 0; v < V; ++v)
        partial[(r * V + v) * C + ch] = U(sum[v]);
    }
  }
}

} // namespace kiln
