// CUDA's built-in vector types for the emulator, with the sizes and alignments of
// vector_types.h (so that reinterpreting a buffer as float4 behaves as on the device), and
// their make_* helpers.
#pragma once

#define KILN_EMU_VEC1(T, N, A)                                                                     \
  struct alignas(A) N##1 {                                                                         \
    T x;                                                                                           \
  };                                                                                               \
  inline N##1 make_##N##1(T x) { return N##1 {x}; }
#define KILN_EMU_VEC2(T, N, A)                                                                     \
  struct alignas(A) N##2 {                                                                         \
    T x, y;                                                                                        \
  };                                                                                               \
  inline N##2 make_##N##2(T x, T y) { return N##2 {x, y}; }
#define KILN_EMU_VEC3(T, N, A)                                                                     \
  struct alignas(A) N##3 {                                                                         \
    T x, y, z;                                                                                     \
  };                                                                                               \
  inline N##3 make_##N##3(T x, T y, T z) { return N##3 {x, y, z}; }
#define KILN_EMU_VEC4(T, N, A)                                                                     \
  struct alignas(A) N##4 {                                                                         \
    T x, y, z, w;                                                                                  \
  };                                                                                               \
  inline N##4 make_##N##4(T x, T y, T z, T w) { return N##4 {x, y, z, w}; }

// Alignments as in CUDA's vector_types.h.
KILN_EMU_VEC1(signed char, char, 1)
KILN_EMU_VEC2(signed char, char, 2)
KILN_EMU_VEC3(signed char, char, 1)
KILN_EMU_VEC4(signed char, char, 4)
KILN_EMU_VEC1(unsigned char, uchar, 1)
KILN_EMU_VEC2(unsigned char, uchar, 2)
KILN_EMU_VEC3(unsigned char, uchar, 1)
KILN_EMU_VEC4(unsigned char, uchar, 4)
KILN_EMU_VEC1(short, short, 2)
KILN_EMU_VEC2(short, short, 4)
KILN_EMU_VEC3(short, short, 2)
KILN_EMU_VEC4(short, short, 8)
KILN_EMU_VEC1(unsigned short, ushort, 2)
KILN_EMU_VEC2(unsigned short, ushort, 4)
KILN_EMU_VEC3(unsigned short, ushort, 2)
KILN_EMU_VEC4(unsigned short, ushort, 8)
KILN_EMU_VEC1(int, int, 4)
KILN_EMU_VEC2(int, int, 8)
KILN_EMU_VEC3(int, int, 4)
KILN_EMU_VEC4(int, int, 16)
KILN_EMU_VEC1(unsigned int, uint, 4)
KILN_EMU_VEC2(unsigned int, uint, 8)
KILN_EMU_VEC3(unsigned int, uint, 4)
KILN_EMU_VEC4(unsigned int, uint, 16)
KILN_EMU_VEC1(long long, longlong, 8)
KILN_EMU_VEC2(long long, longlong, 16)
KILN_EMU_VEC1(unsigned long long, ulonglong, 8)
KILN_EMU_VEC2(unsigned long long, ulonglong, 16)
KILN_EMU_VEC1(float, float, 4)
KILN_EMU_VEC2(float, float, 8)
KILN_EMU_VEC3(float, float, 4)
KILN_EMU_VEC4(float, float, 16)
KILN_EMU_VEC1(double, double, 8)
KILN_EMU_VEC2(double, double, 16)

#undef KILN_EMU_VEC1
#undef KILN_EMU_VEC2
#undef KILN_EMU_VEC3
#undef KILN_EMU_VEC4

// Launch dimensions: unspecified components default to 1, as in CUDA.
struct dim3 {
  unsigned int x = 1, y = 1, z = 1;
  constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1)
      : x(vx), y(vy), z(vz) {}
  constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
  constexpr operator uint3() const { return uint3{x, y, z}; }
};
