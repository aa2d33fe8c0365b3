// kiln's device API: what every kernel template is written against. The same instance
// source compiles for the GPU (NVRTC or nvcc: __CUDACC__ / __CUDACC_RTC__) and with the
// host compiler for the emu backend (runtime/emu/device/emu.hpp), where the threads of a block
// run as fibers and every memory access can be checked.
//
// Rules for templates, so the emulator sees everything:
//  - kernel arguments arrive as `KernelArgs` (buffers in the manifest's argument order);
//    read them with `arg<T>(args, i)`, a bounds-checked global pointer in emu;
//  - shared memory only through `Shared<T>` (KILN_SHARED_ARRAY, dynamic_shared<T>);
//  - barriers, warp collectives, mma and async copies only through the functions here;
//  - no inline PTX outside this header and no CUDA headers (NVRTC has none built in).
#pragma once

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define KILN_CUDA 1
#define KILN_FN __device__ __forceinline__
#define KILN_CONST __device__ __host__ constexpr
#else
#define KILN_EMU 1
#define KILN_FN inline
#define KILN_CONST constexpr
#include "runtime/emu/device/emu.hpp"
#endif

namespace kiln {

using i32 = int;
using u32 = unsigned int;
using i64 = long long;
using u64 = unsigned long long;
using u16 = unsigned short;
using u8 = unsigned char;

inline constexpr int kMaxArgs = 16;

// The single parameter of every kiln kernel: its buffers, in the manifest's order.
struct KernelArgs {
  void* p[kMaxArgs];
};

// A kernel entry point: extern "C" (the runtime finds it by name), one KernelArgs
// parameter named kiln_args, at most `threads` threads per block. One resident block per SM
// is all a kernel promises, so ptxas may use every register it needs rather than squeezing
// (and spilling) to fit more blocks: the variant's occupancy is selection's business.
// KILN_KERNEL_OCC promises `blocks` resident blocks per SM instead: the occupancy the cost
// model priced the variant at (generator/cost/main_loop.hpp), which ptxas then keeps.
#if defined(KILN_CUDA)
#define KILN_KERNEL(name, threads)                                                                 \
  extern "C" __global__ void __launch_bounds__(threads, 1) name(::kiln::KernelArgs kiln_args)
#define KILN_KERNEL_OCC(name, threads, blocks)                                                     \
  extern "C" __global__ void __launch_bounds__(threads, blocks) name(::kiln::KernelArgs kiln_args)
// KILN_KERNEL_CLUSTER: one block per SM, launched in clusters of `cx` blocks along x (sm_90;
// the launch's Kernel::cluster says the same, for the emulator).
#define KILN_KERNEL_CLUSTER(name, threads, cx)                                                     \
  extern "C" __global__ void __launch_bounds__(threads, 1) __cluster_dims__(cx, 1, 1)              \
      name(::kiln::KernelArgs kiln_args)
#else
#define KILN_KERNEL(name, threads) extern "C" void name(::kiln::KernelArgs kiln_args)
#define KILN_KERNEL_CLUSTER(name, threads, cx) extern "C" void name(::kiln::KernelArgs kiln_args)
#define KILN_KERNEL_OCC(name, threads, blocks) extern "C" void name(::kiln::KernelArgs kiln_args)
#endif

// 16-bit floating-point storage types (bit patterns; arithmetic happens in float).
struct f16 {
  u16 bits;
};
struct bf16 {
  u16 bits;
};

// V elements loaded and stored as one: the alignment makes it one vector access (16 bytes at
// most: LDG.E.128 / LDS.128).
template <class T, int V> struct alignas(sizeof(T) * V) Pack { T e[V]; };

} // namespace kiln

#if defined(KILN_CUDA)
#include "common/device_cuda.cuh"
#include "common/hopper_cuda.cuh"
#else
#include "runtime/emu/device/device_emu.hpp"
#include "runtime/emu/device/hopper_emu.hpp"
#endif

namespace kiln {

// ---- element conversions -------------------------------------------------------------
KILN_FN float to_float(float x) { return x; }
KILN_FN float to_float(f16 x) { return half_to_float(x.bits); }
KILN_FN float to_float(bf16 x) { return bf16_to_float(x.bits); }
template <class T> KILN_FN T from_float(float x);
template <> KILN_FN float from_float<float>(float x) { return x; }
template <> KILN_FN f16 from_float<f16>(float x) { return f16{float_to_half(x)}; }
template <> KILN_FN bf16 from_float<bf16>(float x) { return bf16{float_to_bf16(x)}; }

// ---- small compile-time helpers --------------------------------------------------------
KILN_CONST int ceil_div(int a, int b) { return (a + b - 1) / b; }
KILN_CONST i64 ceil_div64(i64 a, i64 b) { return (a + b - 1) / b; }
template <class T> KILN_CONST T min_of(T a, T b) { return a < b ? a : b; }
template <class T> KILN_CONST T max_of(T a, T b) { return a < b ? b : a; }
// std::conditional, which NVRTC lacks (no standard headers).
template <bool B, class X, class Y> struct pick { using type = X; };
template <class X, class Y> struct pick<false, X, Y> { using type = Y; };

// A typed view of kernel argument i (global memory).
template <class T> KILN_FN Global<T> arg(const KernelArgs& a, int i) {
  return Global<T>::from_arg(a.p[i], i);
}

// Index of the calling thread within its block / warp.
KILN_FN int thread_linear() {
  return int(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z));
}
KILN_FN int lane_id() { return thread_linear() & 31; }
KILN_FN int warp_id() { return thread_linear() >> 5; }

// One arrival on `bar` for the whole warp, once every lane is past what precedes it (a stage's
// release after the warp's wgmma wait): one shared-memory atomic where a per-thread arrival
// makes 32, on the consumer's path between two stages. The barrier counts warps.
KILN_FN void mbarrier_arrive_warp(Shared<u64> bar) {
  sync_warp();
  if (lane_id() == 0) mbarrier_arrive(bar);
}

// A tensor-core Cfg's B_TF32: its float weights arrive rounded to tf32 (the prepare phase's
// conversion or batchnorm folding rounded them), so the kernel does not round them again.
// Absent: false.
template <class Cfg, class = void> struct b_tf32_of { static constexpr bool value = false; };
template <class Cfg> struct b_tf32_of<Cfg, decltype(void(Cfg::B_TF32))> {
  static constexpr bool value = Cfg::B_TF32;
};
// A_TF32: its float activations x arrive rounded to tf32 (the producer's epilogue rounded
// them: Y_TF32), so the kernel does not round them again. Absent: false.
template <class Cfg, class = void> struct a_tf32_of { static constexpr bool value = false; };
template <class Cfg> struct a_tf32_of<Cfg, decltype(void(Cfg::A_TF32))> {
  static constexpr bool value = Cfg::A_TF32;
};
// Y_TF32: the fused epilogue rounds each float it stores to tf32 (cvt.rna), for readers that
// are all tf32 tensor-core convs (generator/rewrite/tf32_operands.cpp). Absent: false.
template <class Cfg, class = void> struct y_tf32_of { static constexpr bool value = false; };
template <class Cfg> struct y_tf32_of<Cfg, decltype(void(Cfg::Y_TF32))> {
  static constexpr bool value = Cfg::Y_TF32;
};

// Y_PITCH: elements between the starts of consecutive pixels' channels of an NHWC y that is
// a channel window of a wider tensor (a concat's output: generator/rewrite/channel_views.cpp,
// Buffer::view_pitch). Absent: Default, y's own channel count.
template <class Cfg, long long Default, class = void> struct y_pitch_of {
  static constexpr long long value = Default;
};
template <class Cfg, long long Default>
struct y_pitch_of<Cfg, Default, decltype(void(Cfg::Y_PITCH))> {
  static constexpr long long value = Cfg::Y_PITCH;
};
// X_PITCH: likewise for an x read through a pitch (a kernel's input that is a channel window
// of a concat's output, its runs X_PITCH elements apart). Absent: Default.
template <class Cfg, long long Default, class = void> struct x_pitch_of {
  static constexpr long long value = Default;
};
template <class Cfg, long long Default>
struct x_pitch_of<Cfg, Default, decltype(void(Cfg::X_PITCH))> {
  static constexpr long long value = Cfg::X_PITCH;
};
// Element i, in memory order, of a tensor stored as runs of RUN elements PITCH apart (a
// pitched channel window: one run per image in NCHW, per pixel in NHWC); PITCH == RUN:
// contiguous, i itself.
template <long long RUN, long long PITCH, class I> KILN_FN I pitched_index(I i) {
  if constexpr (PITCH == RUN)
    return i;
  else
    return i / I(RUN) * I(PITCH) + i % I(RUN);
}

} // namespace kiln
