// Internals shared by the CPU reference ops: storing a double result into T, shape checks
// (a wrong plan must fail loudly, never read out of bounds) and window index ranges.
#pragma once

#include "runtime/cpu/ops.hpp"
#include "runtime/error.hpp"

#include <algorithm>
#include <cstdint>
#include <string_view>

namespace kiln::cpu::detail {

// Round once to T; with `accumulate` the old value joins the sum in double first.
template <class T> inline void put(T& dst, double v, bool accumulate) {
  dst = accumulate ? T(double(dst) + v) : T(v);
}

template <class... A> inline void need(bool ok, std::string_view op, const A&... what) {
  if (!ok)
    throw Error(cat("cpu ", op, ": ", what...));
}

inline void need_rank(const Shape& s, size_t rank, std::string_view op, std::string_view name) {
  need(s.size() == rank, op, name, " must be ", rank, "-D, got ", shape_str(s));
}

inline void need_same(const Shape& a, const Shape& b, std::string_view op, std::string_view an,
                      std::string_view bn) {
  need(a == b, op, an, " ", shape_str(a), " and ", bn, " ", shape_str(b), " differ");
}

// Product of the dimensions from `first` on (1 for none).
inline int64_t inner_size(const Shape& s, size_t first) {
  int64_t n = 1;
  for (size_t i = first; i < s.size(); ++i)
    n *= s[i];
  return n;
}

// The outputs o in [0, out) whose input index o * s + off lies in [0, in), as [lo, hi).
// Computed once per row so the inner loops carry no bounds tests.
struct Range {
  int64_t lo, hi;
};
inline Range valid_range(int64_t off, int64_t s, int64_t in, int64_t out) {
  const int64_t lo = off >= 0 ? 0 : (-off + s - 1) / s;
  const int64_t last = in - 1 - off; // o * s <= last
  const int64_t hi = last < 0 ? 0 : std::min(out, last / s + 1);
  return {lo, std::max(lo, hi)};
}

// Inner loops of conv2d, written in fixed blocks: GCC's -O2 vectorizer (the very-cheap cost
// model) skips plain loops that need an epilogue but takes these. Each element's update is
// the same as in a plain loop, so results do not depend on the optimisation level.
inline constexpr int64_t lanes = 4;

// acc[i] += w * x[i * s] for i in [0, n)
template <class T>
inline void axpy(double* __restrict acc, const T* __restrict x, int64_t s, double w, int64_t n) {
  int64_t i = 0;
  if (s == 1) {
    for (; i + lanes <= n; i += lanes)
      for (int64_t j = 0; j < lanes; ++j)
        acc[i + j] += w * double(x[i + j]);
  } else {
    for (; i + lanes <= n; i += lanes)
      for (int64_t j = 0; j < lanes; ++j)
        acc[i + j] += w * double(x[(i + j) * s]);
  }
  for (; i < n; ++i)
    acc[i] += w * double(x[i * s]);
}

// acc[i * s] += w * x[i] for i in [0, n)
template <class T>
inline void axpy_scatter(double* __restrict acc, int64_t s, const T* __restrict x, double w,
                         int64_t n) {
  int64_t i = 0;
  if (s == 1) {
    for (; i + lanes <= n; i += lanes)
      for (int64_t j = 0; j < lanes; ++j)
        acc[i + j] += w * double(x[i + j]);
  } else {
    for (; i + lanes <= n; i += lanes)
      for (int64_t j = 0; j < lanes; ++j)
        acc[(i + j) * s] += w * double(x[i + j]);
  }
  for (; i < n; ++i)
    acc[i * s] += w * double(x[i]);
}

// acc[i] += a[i] * b[i * s] for i in [0, n)
template <class T>
inline void mul_add(double* __restrict acc, const T* __restrict a, const T* __restrict b, int64_t s,
                    int64_t n) {
  int64_t i = 0;
  if (s == 1) {
    for (; i + lanes <= n; i += lanes)
      for (int64_t j = 0; j < lanes; ++j)
        acc[i + j] += double(a[i + j]) * double(b[i + j]);
  } else {
    for (; i + lanes <= n; i += lanes)
      for (int64_t j = 0; j < lanes; ++j)
        acc[i + j] += double(a[i + j]) * double(b[(i + j) * s]);
  }
  for (; i < n; ++i)
    acc[i] += double(a[i]) * double(b[i * s]);
}

} // namespace kiln::cpu::detail
