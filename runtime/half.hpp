// IEEE binary16 and bfloat16 conversions on the host, round to nearest even, as the
// device's __float2half_rn / __float2bfloat16_rn.
#pragma once

#include <bit>
#include <cstdint>

namespace kiln {

inline uint16_t float_to_half_bits(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t mag = x & 0x7fffffffu;
  if (mag >= 0x7f800000u) // inf or nan (keep nan quiet and nonzero)
    return uint16_t(sign | 0x7c00u | (mag > 0x7f800000u ? 0x200u | ((mag >> 13) & 0x3ffu) : 0u));
  if (mag >= 0x477ff000u) return uint16_t(sign | 0x7c00u); // rounds to >= 65520: inf
  if (mag < 0x38800000u) {                                 // subnormal or zero in half
    if (mag < 0x33000000u) return uint16_t(sign);          // below half the smallest subnormal
    uint32_t exp = mag >> 23;
    uint32_t mant = (mag & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126u - exp; // 14 + (113 - exp) - 1 ... aligns to 2^-24 units
    uint32_t r = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1u);
    uint32_t half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (r & 1u))) ++r;
    return uint16_t(sign | r);
  }
  uint32_t r = mag - 0x38000000u; // rebias exponent 127 -> 15
  uint32_t lsb = (r >> 13) & 1u;
  r += 0xfffu + lsb;
  return uint16_t(sign | (r >> 13));
}

inline float half_bits_to_float(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t x;
  if (exp == 0x1fu) x = sign | 0x7f800000u | (mant << 13);
  else if (exp != 0) x = sign | ((exp + 112u) << 23) | (mant << 13);
  else if (mant == 0) x = sign;
  else { // subnormal: normalize
    int e = -1;
    do { mant <<= 1; ++e; } while (!(mant & 0x400u));
    x = sign | uint32_t(112 - e) << 23 | ((mant & 0x3ffu) << 13);
  }
  return std::bit_cast<float>(x);
}

inline uint16_t float_to_bf16_bits(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return uint16_t((x >> 16) | 0x40u); // quiet nan
  x += 0x7fffu + ((x >> 16) & 1u);
  return uint16_t(x >> 16);
}

inline float bf16_bits_to_float(uint16_t b) { return std::bit_cast<float>(uint32_t(b) << 16); }

// Round a value through a storage type and back (the values a buffer of that type can hold).
inline float round_to_half(float f) { return half_bits_to_float(float_to_half_bits(f)); }
inline float round_to_bf16(float f) { return bf16_bits_to_float(float_to_bf16_bits(f)); }

// cvt.rna.tf32.f32: round to nearest, ties away from zero, to 10 mantissa bits (the low 13
// bits zero), as tf32 tensor-core operands hold them.
inline uint32_t float_to_tf32_bits(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7f800000u) == 0x7f800000u) // inf stays, NaN stays NaN
    return (x & 0x007fffffu) ? ((x & 0xffffe000u) | 0x00400000u) : x;
  return (x + 0x1000u) & 0xffffe000u; // sign-magnitude: adding half an ulp rounds away
}
inline float round_to_tf32(float f) { return std::bit_cast<float>(float_to_tf32_bits(f)); }

} // namespace kiln
