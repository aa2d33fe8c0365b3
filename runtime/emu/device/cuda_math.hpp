// CUDA's device math, bit-cast and 16-bit float intrinsics on the host. The fast-math
// variants (__expf ...) compute the accurate function: results stay within the tolerances
// kiln declares, and the emulator never needs to reproduce the GPU's last bits.
#pragma once

#include "runtime/half.hpp"

#include <bit>
#include <cstdint>
#include <type_traits>

// Only the C library's math.h (expf, sqrtf, fmaxf, ... in the global namespace, as kernels
// call them): libstdc++'s <cmath> adds ~25k lines every emulated kernel would parse.
#define _GLIBCXX_INCLUDE_NEXT_C_HEADERS
#include <math.h>
#undef _GLIBCXX_INCLUDE_NEXT_C_HEADERS

namespace kiln::emu {
// The value type behind an operand (a shared-memory proxy specializes this).
template <class T> struct value_of { using type = T; };
template <class T> using value_of_t = typename value_of<T>::type;
template <class A, class B>
concept MinMaxOperands = std::is_arithmetic_v<value_of_t<A>> && std::is_arithmetic_v<value_of_t<B>>;
} // namespace kiln::emu

// ---- math ------------------------------------------------------------------------------------
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / sqrt(x); }
inline float __expf(float x) { return expf(x); }
inline float __exp10f(float x) { return powf(10.0f, x); }
inline float __logf(float x) { return logf(x); }
inline float __log2f(float x) { return log2f(x); }
inline float __log10f(float x) { return log10f(x); }
inline float __powf(float x, float y) { return powf(x, y); }
inline float __sinf(float x) { return sinf(x); }
inline float __cosf(float x) { return cosf(x); }
inline float __tanf(float x) { return tanf(x); }
inline float __tanhf(float x) { return tanhf(x); }
inline float __fdividef(float x, float y) { return x / y; }
inline float __frcp_rn(float x) { return 1.0f / x; }
inline float __fsqrt_rn(float x) { return sqrtf(x); }
inline float __fadd_rn(float x, float y) { return x + y; }
inline float __fmul_rn(float x, float y) { return x * y; }
inline float __fdiv_rn(float x, float y) { return x / y; }
inline float __fmaf_rn(float x, float y, float z) { return fmaf(x, y, z); }
inline float __saturatef(float x) { return x >= 1.0f ? 1.0f : (x > 0.0f ? x : 0.0f); } // NaN -> 0
inline int __float2int_rn(float x) { return int(nearbyintf(x)); }
inline int __float2int_rz(float x) { return int(x); }
inline int __float2int_rd(float x) { return int(floorf(x)); }
inline int __float2int_ru(float x) { return int(ceilf(x)); }
inline float __int2float_rn(int x) { return float(x); }

// CUDA's max/min: overloaded for every arithmetic pair (fmax/fmin semantics for floats).
template <class A, class B>
requires kiln::emu::MinMaxOperands<A, B>
inline auto max(A a, B b) {
  using C = std::common_type_t<kiln::emu::value_of_t<A>, kiln::emu::value_of_t<B>>;
  const C x = C(kiln::emu::value_of_t<A>(static_cast<A&&>(a)));
  const C y = C(kiln::emu::value_of_t<B>(static_cast<B&&>(b)));
  if constexpr (std::is_same_v<C, float>)
    return fmaxf(x, y);
  else if constexpr (std::is_floating_point_v<C>)
    return C(fmaxl(x, y));
  else
    return x < y ? y : x;
}
template <class A, class B>
requires kiln::emu::MinMaxOperands<A, B>
inline auto min(A a, B b) {
  using C = std::common_type_t<kiln::emu::value_of_t<A>, kiln::emu::value_of_t<B>>;
  const C x = C(kiln::emu::value_of_t<A>(static_cast<A&&>(a)));
  const C y = C(kiln::emu::value_of_t<B>(static_cast<B&&>(b)));
  if constexpr (std::is_same_v<C, float>)
    return fminf(x, y);
  else if constexpr (std::is_floating_point_v<C>)
    return C(fminl(x, y));
  else
    return y < x ? y : x;
}

// ---- bits ------------------------------------------------------------------------------------
inline unsigned int __float_as_uint(float x) { return std::bit_cast<unsigned int>(x); }
inline float __uint_as_float(unsigned int x) { return std::bit_cast<float>(x); }
inline int __float_as_int(float x) { return std::bit_cast<int>(x); }
inline float __int_as_float(int x) { return std::bit_cast<float>(x); }
inline long long __double_as_longlong(double x) { return std::bit_cast<long long>(x); }
inline double __longlong_as_double(long long x) { return std::bit_cast<double>(x); }
inline int __popc(unsigned int x) { return std::popcount(x); }
inline int __popcll(unsigned long long x) { return std::popcount(x); }
inline int __clz(int x) { return std::countl_zero(unsigned(x)); }
inline int __clzll(long long x) { return std::countl_zero((unsigned long long)(x)); }
inline int __ffs(int x) { return x == 0 ? 0 : std::countr_zero(unsigned(x)) + 1; }
inline int __ffsll(long long x) {
  return x == 0 ? 0 : std::countr_zero((unsigned long long)(x)) + 1;
}
inline unsigned int __brev(unsigned int x) {
  unsigned r = 0;
  for (int i = 0; i < 32; ++i)
    r |= ((x >> i) & 1u) << (31 - i);
  return r;
}
inline unsigned int __umulhi(unsigned int x, unsigned int y) {
  return unsigned((std::uint64_t(x) * y) >> 32);
}
inline int __mulhi(int x, int y) { return int((std::int64_t(x) * y) >> 32); }

// ---- 16-bit floats (cuda_fp16.h / cuda_bf16.h conversions; round to nearest even) -----------
struct __half {
  unsigned short __x;
};
struct __nv_bfloat16 {
  unsigned short __x;
};
using half = __half;
using nv_bfloat16 = __nv_bfloat16;
inline __half __float2half(float f) { return __half{kiln::float_to_half_bits(f)}; }
inline __half __float2half_rn(float f) { return __float2half(f); }
inline float __half2float(__half h) { return kiln::half_bits_to_float(h.__x); }
inline unsigned short __half_as_ushort(__half h) { return h.__x; }
inline __half __ushort_as_half(unsigned short x) { return __half{x}; }
inline __nv_bfloat16 __float2bfloat16(float f) {
  return __nv_bfloat16{kiln::float_to_bf16_bits(f)};
}
inline __nv_bfloat16 __float2bfloat16_rn(float f) { return __float2bfloat16(f); }
inline float __bfloat162float(__nv_bfloat16 b) { return kiln::bf16_bits_to_float(b.__x); }
inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 b) { return b.__x; }
inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short x) { return __nv_bfloat16{x}; }
