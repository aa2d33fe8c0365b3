// Elements as the bits of 32-bit words (the unit of shared memory and of mma fragment
// registers), and consecutive pairs as one aligned word for paired loads and stores.
#pragma once

#include "common/kiln.cuh"

namespace kiln {

KILN_FN u32 bits_of(f16 v) { return v.bits; }
KILN_FN u32 bits_of(bf16 v) { return v.bits; }
KILN_FN u32 bits_of(float v) { return __float_as_uint(v); }

// Two consecutive elements as one aligned word (u32 for 16-bit types, u64 for float), and back.
KILN_FN u32 pair(f16 a, f16 b) { return u32(a.bits) | u32(b.bits) << 16; }
KILN_FN u32 pair(bf16 a, bf16 b) { return u32(a.bits) | u32(b.bits) << 16; }
KILN_FN u64 pair(float a, float b) {
  return u64(__float_as_uint(a)) | u64(__float_as_uint(b)) << 32;
}
template <class T> KILN_FN T lo(u32 p) { return T{u16(p & 0xffffu)}; }
template <class T> KILN_FN T hi(u32 p) { return T{u16(p >> 16)}; }
template <class T> KILN_FN T lo(u64 p) { return __uint_as_float(u32(p)); }
template <class T> KILN_FN T hi(u64 p) { return __uint_as_float(u32(p >> 32)); }

} // namespace kiln
