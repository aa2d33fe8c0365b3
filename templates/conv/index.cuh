// Index arithmetic shared by the conv templates: 32-bit offsets where every tensor of the
// instance fits (fewer registers and instructions than 64-bit).
#pragma once

#include "common/kiln.cuh"

namespace kiln::conv {

template <bool Small> struct IndexOf { using type = i64; };
template <> struct IndexOf<true> { using type = int; };
// The offset type for tensors of at most `elements` elements.
template <i64 elements> using index_t = typename IndexOf<(elements < (i64(1) << 31))>::type;

} // namespace kiln::conv
