// The compacted form of a sparse activation (DESIGN.md 5.4): what a compaction writes and a
// sparse convolution reads instead of the dense tensor.
//
// For x, logically [N, C, H, W] (any layout), and a slice size CS (1..255): each pixel p =
// (n * H + h) * W + w holds SL = ceil(C / CS) units, unit (p, s) covering channels
// [s * CS, min(C, (s + 1) * CS)). A unit keeps its nonzeros in ascending channel order:
//   values [N*H*W, SL, CS]  (x's dtype)  slots [0, count) hold the nonzero values,
//   index  [N*H*W, SL, CS]  (u8)         their channel within the slice (0..CS-1),
//   count  [N*H*W, SL]      (u8)         how many slots are used (0..CS),
//   nnz    [1]              (i32)        the running count of nonzeros (optional): a
//                                        compaction adds x's nonzeros to it.
// Slots past a unit's count are never read and hold anything. The form does not depend on
// the consumer's tiling: units are per input pixel, so the tiles of a convolution, whose
// input windows overlap, share them instead of each keeping its own copy of the halo, and
// one compaction serves every consumer that uses the same slice size.
#pragma once

#include "runtime/shape.hpp"

#include <cstdint>
#include <string>
#include <string_view>

namespace kiln {

inline constexpr int64_t kMaxSparseSlice = 255; // counts are u8

// The argument roles of a compacted form: the form of x (what sparse.compact writes and
// the sparse convolutions read), or the form of y that a producer (relu, batchnorm, a conv)
// writes of its own output as it writes y.
struct FormRoles {
  const char *values, *index, *count, *nnz;
};
inline constexpr FormRoles kFormOfX{"values", "index", "count", "nnz"};
inline constexpr FormRoles kFormOfY{"y_values", "y_index", "y_count", "y_nnz"};
inline bool is_form_role(std::string_view r, const FormRoles& f) {
  return r == f.values || r == f.index || r == f.count || r == f.nnz;
}

struct SparseForm {
  int64_t pixels = 0;   // N*H*W
  int64_t channels = 0; // C
  int64_t slices = 0;   // SL
  int64_t slice = 0;    // CS

  // The form of x [N, C, H, W] with slice size cs.
  static SparseForm of(const Shape& x, int64_t cs) {
    SparseForm f;
    f.pixels = x[0] * x[2] * x[3];
    f.channels = x[1];
    f.slice = cs;
    f.slices = (x[1] + cs - 1) / cs;
    return f;
  }
  Shape values_shape() const { return {pixels, slices, slice}; }
  Shape count_shape() const { return {pixels, slices}; }
  int64_t units() const { return pixels * slices; }
};

// "" when values, index and count are the compacted form of a tensor of shape x (x 4-D,
// values and index [N*H*W, SL, CS] with 1 <= CS <= 255 and SL = ceil(C / CS), count
// [N*H*W, SL]); otherwise what is wrong.
std::string sparse_form_mismatch(const Shape& x, const Shape& values, const Shape& index,
                                 const Shape& count);

} // namespace kiln
