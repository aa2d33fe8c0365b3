// The device API on a real GPU: thin wrappers over CUDA builtins and PTX.
#pragma once

namespace kiln {

// ---- 16-bit float conversions (PTX cvt; bf16 by integer rounding before sm_80) ---------
KILN_FN float half_to_float(u16 h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}
KILN_FN u16 float_to_half(float f) {
  u16 h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}
KILN_FN float bf16_to_float(u16 b) { return __uint_as_float(u32(b) << 16); }
KILN_FN u16 float_to_bf16(float f) {
#if __CUDA_ARCH__ >= 800
  u16 b;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(b) : "f"(f));
  return b;
#else
  u32 x = __float_as_uint(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return u16((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return u16(x >> 16);
#endif
}
// Rounds a float to tf32 (what mma.sync .tf32 operands hold).
KILN_FN u32 float_to_tf32(float f) {
#if __CUDA_ARCH__ >= 800
  u32 r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(f));
  return r;
#else // round to nearest, ties away, to 10 mantissa bits (tf32 mma needs sm_80 anyway)
  const u32 x = __float_as_uint(f);
  return (x & 0x7f800000u) == 0x7f800000u ? x : (x + 0x1000u) & 0xffffe000u;
#endif
}

// ---- memory ------------------------------------------------------------------------------
// A global-memory array: a raw pointer on the device (bounds-checked in emu).
template <class T> struct Global {
  T* p;
  static KILN_FN Global from_arg(void* ptr, int) { return Global{static_cast<T*>(ptr)}; }
  KILN_FN T& operator[](i64 i) const { return p[i]; }
  KILN_FN Global operator+(i64 i) const { return Global{p + i}; }
  KILN_FN T* raw() const { return p; }
};

// A shared-memory array.
template <class T> struct Shared {
  T* p;
  KILN_FN T& operator[](int i) const { return p[i]; }
  KILN_FN Shared operator+(int i) const { return Shared{p + i}; }
  KILN_FN T* raw() const { return p; }
};

// Reinterprets an array as elements of another type (vector loads, fragment pairs); the
// addresses used must suit U's alignment (checked in emu).
template <class U, class T> KILN_FN Global<U> view_as(Global<T> g) {
  return Global<U>{reinterpret_cast<U*>(g.p)};
}
template <class U, class T> KILN_FN Shared<U> view_as(Shared<T> s) {
  return Shared<U>{reinterpret_cast<U*>(s.p)};
}

// Declares a block-wide shared array `name` of N elements of T.
#define KILN_SHARED_ARRAY(T, name, N)                                                           \
  __shared__ __align__(16) T name##_kiln_storage[N];                                           \
  const ::kiln::Shared<T> name{name##_kiln_storage}

// The dynamic shared memory of the launch, from a byte offset (16-byte aligned).
template <class T> KILN_FN Shared<T> dynamic_shared(int byte_offset = 0) {
  extern __shared__ __align__(16) unsigned char kiln_dynamic_smem[];
  return Shared<T>{reinterpret_cast<T*>(kiln_dynamic_smem + byte_offset)};
}

// ---- synchronisation and warp collectives (full warps) ------------------------------------
KILN_FN void sync_threads() { __syncthreads(); }
KILN_FN void sync_warp() { __syncwarp(); } // orders the warp's shared-memory accesses too
template <class T> KILN_FN T shfl_xor(T v, int mask) { return __shfl_xor_sync(0xffffffffu, v, mask); }
template <class T> KILN_FN T shfl_down(T v, int delta) { return __shfl_down_sync(0xffffffffu, v, delta); }
template <class T> KILN_FN T shfl_idx(T v, int lane) { return __shfl_sync(0xffffffffu, v, lane); }
KILN_FN u32 ballot(bool pred) { return __ballot_sync(0xffffffffu, pred); }
KILN_FN float atomic_add(float* p, float v) { return atomicAdd(p, v); }
// Integer sums are exact whatever the order: counts (a compaction's nonzeros) may use them.
KILN_FN int atomic_add(int* p, int v) { return atomicAdd(p, v); }
// Orders the calling thread's global writes before its later ones for every other block
// (a release before a ticket's atomic, an acquire after it): membar.gl.
KILN_FN void thread_fence() { __threadfence(); }

// ---- tensor cores: one warp computes D = A * B + C (fragments as in the PTX ISA) ----------
// m16n8k16, f16 or bf16 operands, f32 accumulate. Per lane (g = lane / 4, t = lane % 4),
// low half of a register first: a[0] = A[g][2t..2t+1], a[1] = A[g+8][2t..], a[2] =
// A[g][2t+8..], a[3] = A[g+8][2t+8..]; b[0] = B[2t..2t+1][g], b[1] = B[2t+8..2t+9][g];
// c[0..1] = C[g][2t..2t+1], c[2..3] = C[g+8][2t..2t+1].
KILN_FN void mma_m16n8k16(float (&d)[4], const u32 (&a)[4], const u32 (&b)[2], const float (&c)[4],
                          f16) {
#if __CUDA_ARCH__ >= 800
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
               "{%8,%9}, {%10,%11,%12,%13};"
               : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]),
                 "f"(c[1]), "f"(c[2]), "f"(c[3]));
#else
  // sm_75 has m16n8k8: two of them make one k16 step.
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, "
               "{%7,%8,%9,%10};"
               : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(b[0]), "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, "
               "{%7,%8,%9,%10};"
               : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
               : "r"(a[2]), "r"(a[3]), "r"(b[1]), "f"(d[0]), "f"(d[1]), "f"(d[2]), "f"(d[3]));
#endif
}
KILN_FN void mma_m16n8k16(float (&d)[4], const u32 (&a)[4], const u32 (&b)[2], const float (&c)[4],
                          bf16) {
#if __CUDA_ARCH__ >= 800
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, "
               "{%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};"
               : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]),
                 "f"(c[1]), "f"(c[2]), "f"(c[3]));
#else
  __trap(); // bf16 tensor cores need sm_80; selection never picks this variant below it
#endif
}
// m16n8k8 with tf32 operands (float bits rounded by float_to_tf32): a[0] = A[g][t], a[1] =
// A[g+8][t], a[2] = A[g][t+4], a[3] = A[g+8][t+4]; b[0] = B[t][g], b[1] = B[t+4][g].
KILN_FN void mma_m16n8k8_tf32(float (&d)[4], const u32 (&a)[4], const u32 (&b)[2],
                              const float (&c)[4]) {
#if __CUDA_ARCH__ >= 800
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, "
               "{%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};"
               : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]),
                 "f"(c[1]), "f"(c[2]), "f"(c[3]));
#endif
}

// ---- shared memory -> mma fragments (ldmatrix, sm_75+) --------------------------------------
// Four 8x8 matrices of 16-bit elements (or 8x4 of 32-bit ones, read the same way): lane l
// gives the address of row l % 8 of matrix l / 8 (16 bytes, 16-byte aligned); r[j] receives,
// in lane l, the 32-bit word l % 4 of row l / 4 of matrix j, the layout of the fragment
// registers above (A: matrices = the four 8x8 quarters; B: two k halves of two n tiles).
template <class T> KILN_FN void ldmatrix_x4(u32 (&r)[4], Shared<T> row) {
  const u32 s = u32(__cvta_generic_to_shared(row.p));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(s));
}

// Stores 16 bytes at dst[0] (16-byte aligned) as one access: NVVM split a uint4 assignment
// into four 4-byte stores where it could not see the alignment through the address arithmetic.
KILN_FN void store16(Global<uint4> dst, uint4 v) {
  asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(dst.p), "r"(v.x), "r"(v.y),
               "r"(v.z), "r"(v.w)
               : "memory");
}

// ---- asynchronous global -> shared copies (cp.async, sm_80+; plain copies before) --------
// Copies 16 bytes (zero-fills them when !valid); both addresses 16-byte aligned.
template <class T>
KILN_FN void cp_async_16(Shared<T> dst, Global<const T> src, bool valid) {
#if __CUDA_ARCH__ >= 800
  const u32 s = u32(__cvta_generic_to_shared(dst.p));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(s), "l"(src.p),
               "r"(valid ? 16 : 0));
#else
  const int4 v = valid ? *reinterpret_cast<const int4*>(src.p) : make_int4(0, 0, 0, 0);
  *reinterpret_cast<int4*>(dst.p) = v;
#endif
}
KILN_FN void cp_async_commit() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;");
#endif
}
// Waits until at most N committed groups are still in flight.
template <int N> KILN_FN void cp_async_wait() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;" ::"n"(N));
#endif
}

} // namespace kiln
