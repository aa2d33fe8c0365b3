// Bounds on untrusted tensor shapes, shared by the file formats.
#pragma once

#include "runtime/shape.hpp"

#include <cstdint>
#include <optional>

namespace kiln::io {

// No tensor read from a file may have more elements than this (8 TiB of f64).
inline constexpr int64_t max_elements = int64_t(1) << 40;

// The element count of a shape of non-negative dimensions, or nullopt when the product of its
// nonzero dimensions exceeds max_elements. Bounding the nonzero product (not just the count,
// which a zero makes 0) keeps every partial product in range, so later numel() calls on the
// shape cannot overflow.
inline std::optional<int64_t> bounded_numel(const Shape& shape) {
  int64_t n = 1;
  bool zero = false;
  for (int64_t d : shape) {
    if (d < 0) return std::nullopt;
    if (d == 0) {
      zero = true;
      continue;
    }
    if (d > max_elements / n) return std::nullopt;
    n *= d;
  }
  return zero ? 0 : n;
}

} // namespace kiln::io
