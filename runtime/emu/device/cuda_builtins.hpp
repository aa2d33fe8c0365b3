// CUDA's execution builtins on fibers: the block barrier, warp shuffles and ballot (every
// lane of the warp must arrive; then each gets its result), atomics on raw pointers, __ldg
// and __trap. Each takes the caller's source location, for reports.
#pragma once

#include "runtime/emu/device/state.hpp"

#include <cstring>
#include <type_traits>

namespace kiln::emu {

template <class T>
T warp_shuffle(WarpOp op, unsigned mask, T v, int param, int width, ::kiln::emu::Site where) {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= 8,
                "kiln emu: warp shuffles move values of at most 8 bytes");
  Fiber& f = *self();
  f.value = 0;
  std::memcpy(&f.value, &v, sizeof(T));
  f.param = param;
  f.width = width;
  f.in[0] = mask;
  warp_collective(f, op, where);
  T r;
  std::memcpy(&r, &f.value, sizeof(T));
  return r;
}

// The address of an atomic or __ldg, checked when any check is on.
inline void check_raw(const void* p, std::size_t size, bool rmw, const char* what) {
  if (block().checks) check_pointer(p, size, rmw, what);
}

} // namespace kiln::emu

inline void __syncthreads(::kiln::emu::Site where = ::kiln::emu::Site::current()) {
  kiln::emu::barrier(where);
}

template <class T>
T __shfl_sync(unsigned mask, T var, int src_lane, int width = 32,
              ::kiln::emu::Site where = ::kiln::emu::Site::current()) {
  return kiln::emu::warp_shuffle(kiln::emu::WarpOp::ShflIdx, mask, var, src_lane, width, where);
}
template <class T>
T __shfl_xor_sync(unsigned mask, T var, int lane_mask, int width = 32,
                  ::kiln::emu::Site where = ::kiln::emu::Site::current()) {
  return kiln::emu::warp_shuffle(kiln::emu::WarpOp::ShflXor, mask, var, lane_mask, width, where);
}
template <class T>
T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = 32,
                   ::kiln::emu::Site where = ::kiln::emu::Site::current()) {
  return kiln::emu::warp_shuffle(kiln::emu::WarpOp::ShflDown, mask, var, int(delta), width, where);
}
inline unsigned __ballot_sync(unsigned mask, int pred,
                              ::kiln::emu::Site where = ::kiln::emu::Site::current()) {
  return unsigned(kiln::emu::warp_shuffle(kiln::emu::WarpOp::Ballot, mask,
                                          kiln::emu::u64(pred != 0), 0, 32, where));
}

// Atomics: real ones (relaxed, as CUDA's), since blocks on other workers may touch the same
// global memory. Compiler builtins rather than <atomic>, which every kernel would parse.
template <class T> inline T kiln_emu_atomic_add(T* p, T v) {
  kiln::emu::check_raw(p, sizeof(T), true, "atomicAdd");
  if constexpr (std::is_integral_v<T>) {
    return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
  } else {
    T old, sum;
    __atomic_load(p, &old, __ATOMIC_RELAXED);
    do
      sum = old + v;
    while (!__atomic_compare_exchange(p, &old, &sum, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
    return old;
  }
}
inline int atomicAdd(int* p, int v) { return kiln_emu_atomic_add(p, v); }
// __threadfence (membar.gl / fence.sc.gpu): a block's threads are fibers of one OS thread, so
// a sequentially consistent fence of that thread orders their global accesses against
// blocks on other workers, as the fence orders them against other SMs.
inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline unsigned atomicAdd(unsigned* p, unsigned v) { return kiln_emu_atomic_add(p, v); }
inline unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) {
  return kiln_emu_atomic_add(p, v);
}
inline float atomicAdd(float* p, float v) { return kiln_emu_atomic_add(p, v); }
inline double atomicAdd(double* p, double v) { return kiln_emu_atomic_add(p, v); }

template <class T> inline T __ldg(const T* p) {
  kiln::emu::check_raw(p, sizeof(T), false, "__ldg");
  return *p;
}

[[noreturn]] inline void __trap() { kiln::emu::fail("__trap() called"); }
