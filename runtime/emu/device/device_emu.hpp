// The device API (kiln.cuh) in the emulator: the same names and semantics as
// device_cuda.cuh, with every memory access checkable. Global<T> carries the byte range of
// the kernel argument it came from; Shared<T> the range of its array and returns a proxy per
// element (shared_ref.hpp) that records accesses for the init and race checks. Barriers,
// warp collectives and mma take the caller's source location for reports.
#pragma once

#include "runtime/emu/device/emu.hpp"
#include "runtime/half.hpp"

#include <bit>
#include <cstring>

namespace kiln {

namespace emu {
inline constexpr unsigned kBounds = KILN_EMU_CHECK_BOUNDS;

// [addr, addr + size) must lie in [lo, hi) and be aligned.
inline void check_global(const void* p, i64 i, std::size_t size, std::size_t align, uptr lo,
                         uptr hi, int arg, const char* what = nullptr) {
  const uptr a = uptr(p) + uptr(i) * size;
  if (a - lo >= hi - lo || (hi - lo) - (a - lo) < size || (a & (align - 1))) [[unlikely]]
    global_fault(a, size, align, lo, hi, arg, what);
}
inline void check_shared(const void* p, i64 i, std::size_t size, std::size_t align, uptr lo,
                         uptr hi, const SharedSite* site) {
  const uptr a = uptr(p) + uptr(i) * size;
  if (a - lo >= hi - lo || (hi - lo) - (a - lo) < size || (a & (align - 1))) [[unlikely]]
    shared_fault(a, size, align, lo, hi, site);
}
} // namespace emu

// ---- 16-bit float conversions (round to nearest even, as cvt.rn) -----------------------------
KILN_FN float half_to_float(u16 h) { return half_bits_to_float(h); }
KILN_FN u16 float_to_half(float f) { return float_to_half_bits(f); }
KILN_FN float bf16_to_float(u16 b) { return bf16_bits_to_float(b); }
KILN_FN u16 float_to_bf16(float f) { return float_to_bf16_bits(f); }
// cvt.rna.tf32.f32: round to nearest, ties away from zero, to 10 mantissa bits.
KILN_FN u32 float_to_tf32(float f) { return float_to_tf32_bits(f); }

// ---- memory ----------------------------------------------------------------------------------
template <class T> struct Global {
  T* p;
  emu::uptr lo = 0, hi = 0; // the argument's bytes
  int arg = -1;
  bool checked = false;

  static Global from_arg(void* ptr, int i) {
    const emu::Block& b = emu::block();
    if (!(b.checks & emu::kBounds)) return Global{static_cast<T*>(ptr)};
    if (i < 0 || i >= kMaxArgs) emu::fail("arg(args, %d): kernels have %d arguments", i, kMaxArgs);
    const emu::uptr base = reinterpret_cast<emu::uptr>(ptr);
    return Global{static_cast<T*>(ptr), base, base + b.launch->arg_bytes[i], i, true};
  }
  T& operator[](i64 i) const {
    if (checked) emu::check_global(p, i, sizeof(T), alignof(T), lo, hi, arg);
    return p[i];
  }
  Global operator+(i64 i) const { return Global{p + i, lo, hi, arg, checked}; }
  T* raw() const { return p; } // unchecked
};

template <class T> struct Shared {
  T* p;
  emu::uptr lo = 0, hi = 0;              // the array's bytes
  const emu::SharedSite* site = nullptr; // null: dynamic shared memory
  unsigned checks = 0;

  emu::SharedRef<T> operator[](int i) const {
    if (checks & emu::kBounds) emu::check_shared(p, i, sizeof(T), alignof(T), lo, hi, site);
    return emu::SharedRef<T>(p + i, checks);
  }
  Shared operator+(int i) const { return Shared{p + i, lo, hi, site, checks}; }
  T* raw() const { return p; } // unchecked
};

// Reinterprets an array as elements of another type (vector loads, fragment pairs).
template <class U, class T> KILN_FN Global<U> view_as(Global<T> g) {
  return Global<U>{reinterpret_cast<U*>(g.p), g.lo, g.hi, g.arg, g.checked};
}
template <class U, class T> KILN_FN Shared<U> view_as(Shared<T> s) {
  return Shared<U>{reinterpret_cast<U*>(s.p), s.lo, s.hi, s.site, s.checks};
}

namespace emu {
template <class T> Shared<T> shared_array(const SharedSite* site, long long n) {
  const std::size_t bytes = n > 0 ? std::size_t(n) * sizeof(T) : 0;
  T* p = static_cast<T*>(shared_alloc(site, bytes));
  return Shared<T>{p, uptr(p), uptr(p) + bytes, site, block().checks};
}
} // namespace emu

// Declares a block-wide shared array `name` of N elements of T, allocated in the block's
// arena at the first declaration (the site's address identifies it).
#define KILN_SHARED_ARRAY(T, name, N)                                                              \
  static constexpr ::kiln::emu::SharedSite name##_kiln_site{#name, __FILE__, __LINE__};            \
  const ::kiln::Shared<T> name = ::kiln::emu::shared_array<T>(&name##_kiln_site, (N))

// The dynamic shared memory of the launch, from a byte offset (16-byte aligned).
template <class T> KILN_FN Shared<T> dynamic_shared(int byte_offset = 0) {
  const emu::Block& b = emu::block();
  if (byte_offset < 0 || std::size_t(byte_offset) > b.dyn_bytes ||
      std::size_t(byte_offset) % alignof(T) != 0)
    emu::fail("dynamic_shared(%d): not an aligned offset into the launch's %zu bytes of "
              "dynamic shared memory",
              byte_offset, b.dyn_bytes);
  char* base = b.arena;
  return Shared<T>{reinterpret_cast<T*>(base + byte_offset), emu::uptr(base),
                   emu::uptr(base + b.dyn_bytes), nullptr, b.checks};
}

// ---- synchronisation and warp collectives (full warps) ---------------------------------------
KILN_FN void sync_threads(::kiln::emu::Site w = ::kiln::emu::Site::current()) { emu::barrier(w); }
template <class T>
KILN_FN T shfl_xor(T v, int mask, ::kiln::emu::Site w = ::kiln::emu::Site::current()) {
  return __shfl_xor_sync(0xffffffffu, v, mask, 32, w);
}
template <class T>
KILN_FN T shfl_down(T v, int delta, ::kiln::emu::Site w = ::kiln::emu::Site::current()) {
  return __shfl_down_sync(0xffffffffu, v, unsigned(delta), 32, w);
}
template <class T>
KILN_FN T shfl_idx(T v, int lane, ::kiln::emu::Site w = ::kiln::emu::Site::current()) {
  return __shfl_sync(0xffffffffu, v, lane, 32, w);
}
// Shuffling an element of shared memory shuffles its value.
template <class T>
KILN_FN T shfl_xor(emu::SharedRef<T> v, int mask,
                   ::kiln::emu::Site w = ::kiln::emu::Site::current()) {
  return __shfl_xor_sync(0xffffffffu, T(static_cast<emu::SharedRef<T>&&>(v)), mask, 32, w);
}
template <class T>
KILN_FN T shfl_down(emu::SharedRef<T> v, int delta,
                    ::kiln::emu::Site w = ::kiln::emu::Site::current()) {
  return __shfl_down_sync(0xffffffffu, T(static_cast<emu::SharedRef<T>&&>(v)), unsigned(delta), 32,
                          w);
}
template <class T>
KILN_FN T shfl_idx(emu::SharedRef<T> v, int lane,
                   ::kiln::emu::Site w = ::kiln::emu::Site::current()) {
  return __shfl_sync(0xffffffffu, T(static_cast<emu::SharedRef<T>&&>(v)), lane, 32, w);
}
// __syncwarp(): every lane arrives (a collective), then each counts it for the race checks.
KILN_FN void sync_warp(::kiln::emu::Site w = ::kiln::emu::Site::current()) {
  __ballot_sync(0xffffffffu, 1, w);
  ++emu::self()->warp_syncs;
}
KILN_FN u32 ballot(bool pred, ::kiln::emu::Site w = ::kiln::emu::Site::current()) {
  return __ballot_sync(0xffffffffu, pred, w);
}
KILN_FN float atomic_add(float* p, float v) { return atomicAdd(p, v); }
KILN_FN float atomic_add(emu::SharedAddr<float> p, float v) { return atomicAdd(p, v); }
KILN_FN int atomic_add(int* p, int v) { return atomicAdd(p, v); }
KILN_FN void thread_fence() { __threadfence(); }

// kiln.cuh's min_of / max_of on shared elements (its templates cannot deduce from a proxy).
template <class T> KILN_FN T max_of(emu::SharedRef<T> a, T b) {
  const T x = static_cast<emu::SharedRef<T>&&>(a);
  return x < b ? b : x;
}
template <class T> KILN_FN T max_of(T a, emu::SharedRef<T> b) {
  const T y = static_cast<emu::SharedRef<T>&&>(b);
  return a < y ? y : a;
}
template <class T> KILN_FN T max_of(emu::SharedRef<T> a, emu::SharedRef<T> b) {
  const T x = static_cast<emu::SharedRef<T>&&>(a), y = static_cast<emu::SharedRef<T>&&>(b);
  return x < y ? y : x;
}
template <class T> KILN_FN T min_of(emu::SharedRef<T> a, T b) {
  const T x = static_cast<emu::SharedRef<T>&&>(a);
  return b < x ? b : x;
}
template <class T> KILN_FN T min_of(T a, emu::SharedRef<T> b) {
  const T y = static_cast<emu::SharedRef<T>&&>(b);
  return y < a ? y : a;
}
template <class T> KILN_FN T min_of(emu::SharedRef<T> a, emu::SharedRef<T> b) {
  const T x = static_cast<emu::SharedRef<T>&&>(a), y = static_cast<emu::SharedRef<T>&&>(b);
  return y < x ? y : x;
}

// ---- tensor cores (fragment layouts: device_cuda.cuh; computed by launch.cpp) -----------------
namespace emu {
inline void mma(WarpOp op, float (&d)[4], const u32 (&a)[4], const u32 (&b)[2], const float (&c)[4],
                ::kiln::emu::Site w) {
  Fiber& f = *self();
  for (int i = 0; i < 4; ++i)
    f.in[i] = a[i];
  f.in[4] = b[0];
  f.in[5] = b[1];
  for (int i = 0; i < 4; ++i)
    f.in[6 + i] = std::bit_cast<u32>(c[i]);
  warp_collective(f, op, w);
  for (int i = 0; i < 4; ++i)
    d[i] = std::bit_cast<float>(f.out[i]);
}
} // namespace emu
KILN_FN void mma_m16n8k16(float (&d)[4], const u32 (&a)[4], const u32 (&b)[2], const float (&c)[4],
                          f16, ::kiln::emu::Site w = ::kiln::emu::Site::current()) {
  emu::mma(emu::WarpOp::MmaF16, d, a, b, c, w);
}
KILN_FN void mma_m16n8k16(float (&d)[4], const u32 (&a)[4], const u32 (&b)[2], const float (&c)[4],
                          bf16, ::kiln::emu::Site w = ::kiln::emu::Site::current()) {
  emu::mma(emu::WarpOp::MmaBf16, d, a, b, c, w);
}
KILN_FN void mma_m16n8k8_tf32(float (&d)[4], const u32 (&a)[4], const u32 (&b)[2],
                              const float (&c)[4],
                              ::kiln::emu::Site w = ::kiln::emu::Site::current()) {
  emu::mma(emu::WarpOp::MmaTf32, d, a, b, c, w);
}

// ---- ldmatrix (layout: device_cuda.cuh): each row address goes to the lanes receiving it ------
// The words are read through the receiving lane's view (its array's bounds: every lane's
// row must lie in one shared array, as the kernels' tiles do).
template <class T>
KILN_FN void ldmatrix_x4(u32 (&r)[4], Shared<T> row,
                         ::kiln::emu::Site w = ::kiln::emu::Site::current()) {
  if (row.checks & emu::kBounds) emu::check_shared(row.p, 0, 16, 16, row.lo, row.hi, row.site);
  const int lane = int(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) & 31;
  const unsigned long long mine = reinterpret_cast<unsigned long long>(row.p);
  for (int j = 0; j < 4; ++j) {
    // The first exchange also checks the rows for bank conflicts.
    const unsigned long long src =
        j == 0 ? emu::warp_shuffle(emu::WarpOp::LdmatrixRows, 0xffffffffu, mine, lane / 4, 32, w)
               : __shfl_sync(0xffffffffu, mine, 8 * j + lane / 4, 32, w);
    const Shared<u32> s{reinterpret_cast<u32*>(src), row.lo, row.hi, row.site, row.checks};
    r[j] = s[lane % 4];
  }
}

// One 16-byte store (checked as one 16-byte aligned access).
KILN_FN void store16(Global<uint4> dst, uint4 v) { dst[0] = v; }

// ---- asynchronous global -> shared copies: performed at once, checked as asynchronous -------
template <class T> KILN_FN void cp_async_16(Shared<T> dst, Global<const T> src, bool valid) {
  char* d = reinterpret_cast<char*>(dst.p);
  if (dst.checks & emu::kBounds) emu::check_shared(d, 0, 16, 16, dst.lo, dst.hi, dst.site);
  unsigned char v[16] = {};
  if (valid) {
    if (src.checked) emu::check_global(src.p, 0, 16, 16, src.lo, src.hi, src.arg, "cp.async");
    std::memcpy(v, src.p, 16);
  }
  if (dst.checks & emu::kShadowChecks) emu::shadow_copy_async(d);
  std::memcpy(d, v, 16);
}
KILN_FN void cp_async_commit() {
  if (emu::block().checks & KILN_EMU_CHECK_RACE) emu::async_commit();
}
// Waits until at most N committed groups are still in flight.
template <int N> KILN_FN void cp_async_wait() {
  if (emu::block().checks & KILN_EMU_CHECK_RACE) emu::async_wait(N);
}

} // namespace kiln
