// Hopper's asynchronous machinery in the emulator, with the names and meaning of
// templates/common/hopper_cuda.cuh: mbarriers, TMA tiled loads, the async-proxy fence,
// elect.sync, setmaxnreg and wgmma. The work happens in launch.cpp (hopper_ops.hpp);
// here are the kernel-facing wrappers. Semantics are the PTX ISA's, with two liberties that
// cannot change a correct kernel's result: a TMA copy lands when it is issued (its bytes
// are unreadable until the mbarrier phase it completes has been waited for), and
// mbarrier_try_wait suspends the thread until the phase completes. Thread-block clusters:
// cluster.hpp.
#pragma once

#include "runtime/emu/tensor_map.h"

namespace kiln {

using TensorMap = KilnTensorMap;

// A kernel argument holding a tensor map (the runtime's encoded map; in emu the description).
KILN_FN const TensorMap* tensor_map_arg(const KernelArgs& a, int i) {
  return static_cast<const TensorMap*>(a.p[i]);
}

// The shared-window address of an element (descriptors, swizzle phase): the arena offset.
template <class T> KILN_FN u32 smem_address(Shared<T> s) {
  return u32(reinterpret_cast<const char*>(s.p) - emu::block().arena);
}

// ---- mbarrier ----------------------------------------------------------------------------------
KILN_FN void mbarrier_init(Shared<u64> bar, u32 count) { emu::mbar_init(bar.p, count); }
KILN_FN void mbarrier_arrive(Shared<u64> bar) { emu::mbar_arrive(bar.p, 0); }
KILN_FN void mbarrier_arrive_expect_tx(Shared<u64> bar, u32 bytes) {
  emu::mbar_arrive(bar.p, (long long)bytes);
}
// Returns once the phase of parity `parity` has completed.
KILN_FN void mbarrier_wait(Shared<u64> bar, u32 parity,
                           ::kiln::emu::Site w = ::kiln::emu::Site::current()) {
  emu::mbar_wait(bar.p, parity & 1u, w);
}
// Orders the barriers' initialisation before their use by the copy engine (follow it with
// sync_threads). Nothing to do in emu: init is immediate.
KILN_FN void fence_barrier_init() {}

// ---- proxies, election, registers ---------------------------------------------------------
// fence.proxy.async.shared::cta: this thread's earlier shared-memory stores become visible
// to the async proxy (wgmma, TMA) once a barrier follows.
KILN_FN void fence_proxy_async() { emu::fence_proxy_async(); }
// elect.sync with a full mask: true in exactly one lane (the lowest).
KILN_FN bool elect_one(::kiln::emu::Site w = ::kiln::emu::Site::current()) {
  const u32 lanes = __ballot_sync(0xffffffffu, true, w);
  const int lane = int(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) & 31;
  return lane == __builtin_ctz(lanes);
}
// setmaxnreg: every thread of the warpgroup, the same count (checked), 24..256 by 8.
template <u32 N> KILN_FN void setmaxnreg_check() {
  static_assert(N >= 24 && N <= 256 && N % 8 == 0, "setmaxnreg: 24..256, a multiple of 8");
}
template <u32 N> KILN_FN void setmaxnreg_inc(::kiln::emu::Site w = ::kiln::emu::Site::current()) {
  setmaxnreg_check<N>();
  emu::Fiber& f = *emu::self();
  f.param = int(N);
  f.width = 1; // inc
  emu::warpgroup_collective(f, emu::WarpOp::SetMaxNreg, w);
}
template <u32 N> KILN_FN void setmaxnreg_dec(::kiln::emu::Site w = ::kiln::emu::Site::current()) {
  setmaxnreg_check<N>();
  emu::Fiber& f = *emu::self();
  f.param = int(N);
  f.width = 0; // dec
  emu::warpgroup_collective(f, emu::WarpOp::SetMaxNreg, w);
}

// ---- TMA: cp.async.bulk.tensor tiled load, completing its bytes on `bar` ----------------------
template <class T, class... C>
KILN_FN void tma_load(Shared<T> dst, const TensorMap* map, Shared<u64> bar, C... coords) {
  static_assert(sizeof...(C) >= 1 && sizeof...(C) <= 5, "tma_load: 1 to 5 coordinates");
  const int c[] = {int(coords)...};
  emu::tma_load(dst.p, map, bar.p, c, int(sizeof...(C)));
}
// Im2col mode (4-D map: C, W, H, N): pixels from position (c, w, h, n), read at the filter
// offsets (w_off, h_off) (runtime/emu/tensor_map.h).
template <class T>
KILN_FN void tma_load_im2col(Shared<T> dst, const TensorMap* map, Shared<u64> bar, int c, int w,
                             int h, int n, u16 w_off, u16 h_off) {
  const int pos[] = {c, w, h, n};
  const unsigned off[] = {w_off, h_off};
  emu::tma_load_im2col(dst.p, map, bar.p, pos, off, 4);
}

// ---- clusters (sm_90; machinery in cluster.hpp) ---------------------------------------------
// Without a cluster launch a block is a cluster of one: rank 0, size 1.
KILN_FN u32 cluster_ctarank() { return emu::block().cluster_rank; }
KILN_FN u32 cluster_size() { return u32(emu::block().cluster->size); }
// barrier.cluster.arrive.release + wait.acquire: every thread of the cluster not exited.
KILN_FN void cluster_sync(::kiln::emu::Site w = ::kiln::emu::Site::current()) {
  emu::cluster_barrier(w);
}
// An arrival (a release) on the mbarrier at bar's offset in CTA `cta` of the cluster.
KILN_FN void mbarrier_arrive_cluster(Shared<u64> bar, u32 cta) {
  emu::mbar_arrive_remote(bar.p, cta);
}
// The box lands at dst's offset in every CTA of cta_mask (bit r: rank r), completing its
// bytes on the mbarrier at bar's offset in each.
template <class T, class... C>
KILN_FN void tma_load_multicast(Shared<T> dst, const TensorMap* map, Shared<u64> bar, u16 cta_mask,
                                C... coords) {
  static_assert(sizeof...(C) == 2 || sizeof...(C) == 4, "tma_load_multicast: 2 or 4 coordinates");
  const int c[] = {int(coords)...};
  emu::tma_load_multicast(dst.p, map, bar.p, cta_mask, c, int(sizeof...(C)));
}

// ---- wgmma --------------------------------------------------------------------------------------
// The accumulator fragment of m64nNk*: N/2 floats per thread, laid out as the PTX ISA's
// wgmma D fragment (hopper_cuda.cuh). In emu, touching it while a wgmma that writes it has not
// been waited for (wgmma_wait) is reported.
template <int N> struct WgmmaAcc {
  static_assert(N >= 8 && N <= 256 && N % 8 == 0, "wgmma N: 8..256 by 8");
  static constexpr int kRegs = N / 2;
  float r[kRegs];
  u32 pending = 0; // 1 + the wgmma group of the last wgmma writing it; 0: none
  float& operator[](int i) {
    if (pending) { // a wgmma wrote it: its group must have been waited for
      emu::check_wgmma_acc(this, pending);
      pending = 0;
    }
    return r[i];
  }
};

// A shared-memory matrix descriptor (PTX ISA "matrix descriptor"): start address, leading
// and stride byte offsets, swizzle (0, 32, 64, 128 bytes).
template <class T>
KILN_FN u64 wgmma_desc(Shared<T> start, int swizzle, u32 lbo_bytes, u32 sbo_bytes) {
  const u64 mode = swizzle == 128 ? 1 : swizzle == 64 ? 2 : swizzle == 32 ? 3 : 0;
  if (swizzle != 0 && swizzle != 32 && swizzle != 64 && swizzle != 128)
    emu::fail("wgmma_desc: swizzle %d is none of 0, 32, 64, 128", swizzle);
  return u64((smem_address(start) & 0x3ffffu) >> 4) | u64((lbo_bytes >> 4) & 0x3fffu) << 16 |
         u64((sbo_bytes >> 4) & 0x3fffu) << 32 | mode << 62;
}

namespace emu {
// kind: 0 f16, 1 bf16, 2 tf32; + 16: A MN-major, + 32: B MN-major (hopper_wgmma.hpp).
template <int N>
inline void wgmma(WgmmaAcc<N>& d, u64 da, u64 db, bool accumulate, int kind, Site w) {
  Fiber& f = *self();
  f.in[0] = u32(da);
  f.in[1] = u32(da >> 32);
  f.in[2] = u32(db);
  f.in[3] = u32(db >> 32);
  f.in[4] = accumulate ? 1u : 0u;
  f.in[5] = u32(kind);
  f.param = N;
  f.value = reinterpret_cast<u64>(d.r);
  if (d.pending && (d.pending - 1) < f.hop.wg_done) d.pending = 0;
  warpgroup_collective(f, WarpOp::Wgmma, w);
  d.pending = f.hop.wg_open + 1;
}
} // namespace emu

// D (64 x N, f32) = A (64 x K, K-major at da) * B (N x K, K-major at db)^T [+ D]: K = 16 for
// f16 / bf16, 8 for tf32 (float operands). Issued by the 128 threads of a warpgroup.
template <int N>
KILN_FN void wgmma(WgmmaAcc<N>& d, u64 da, u64 db, bool accumulate, f16,
                   ::kiln::emu::Site w = ::kiln::emu::Site::current()) {
  emu::wgmma(d, da, db, accumulate, 0, w);
}
template <int N>
KILN_FN void wgmma(WgmmaAcc<N>& d, u64 da, u64 db, bool accumulate, bf16,
                   ::kiln::emu::Site w = ::kiln::emu::Site::current()) {
  emu::wgmma(d, da, db, accumulate, 1, w);
}
template <int N>
KILN_FN void wgmma(WgmmaAcc<N>& d, u64 da, u64 db, bool accumulate, float,
                   ::kiln::emu::Site w = ::kiln::emu::Site::current()) {
  emu::wgmma(d, da, db, accumulate, 2, w);
}
// D (64 x N, f32) = A (64 x 16, M-major at da) * B (16 x N, N-major at db) [+ D]: both
// operands transposed (imm-trans-a = imm-trans-b = 1), as a weight gradient reads dy and x
// with their channels contiguous; f16 and bf16 only (the PTX ISA has no transposed tf32).
template <int N>
KILN_FN void wgmma_mn(WgmmaAcc<N>& d, u64 da, u64 db, bool accumulate, f16,
                      ::kiln::emu::Site w = ::kiln::emu::Site::current()) {
  emu::wgmma(d, da, db, accumulate, 0 | 16 | 32, w);
}
template <int N>
KILN_FN void wgmma_mn(WgmmaAcc<N>& d, u64 da, u64 db, bool accumulate, bf16,
                      ::kiln::emu::Site w = ::kiln::emu::Site::current()) {
  emu::wgmma(d, da, db, accumulate, 1 | 16 | 32, w);
}
// wgmma.fence: orders register accesses before the next wgmma (a no-op in emu).
KILN_FN void wgmma_fence() {}
KILN_FN void wgmma_commit() { ++emu::self()->hop.wg_open; }
// Waits until at most N committed wgmma groups are pending.
template <int N> KILN_FN void wgmma_wait() {
  emu::Fiber& f = *emu::self();
  if (f.hop.wg_open >= u32(N) && f.hop.wg_open - u32(N) > f.hop.wg_done) {
    const u32 before = f.hop.wg_done;
    f.hop.wg_done = f.hop.wg_open - u32(N);
    emu::wgmma_retire(f, before); // the groups now complete read what they read at issue?
  }
}

} // namespace kiln
