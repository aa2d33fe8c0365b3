// Hopper's asynchronous machinery on the GPU (sm_90; wgmma and setmaxnreg need sm_90a):
// mbarriers, TMA tiled loads, the async-proxy fence, elect.sync, setmaxnreg and wgmma, as
// the PTX ISA defines them. The emulator's side: runtime/emu/device/hopper_emu.hpp.
//
// wgmma accumulator layout (PTX ISA, wgmma D fragment for m64nN, f32): warp w of the
// warpgroup holds rows 16w..16w+15; in lane l (g = l / 4, t = l % 4), register 4j + 2h + e
// holds D[16w + 8h + g][8j + 2t + e] (j < N/8, h, e in {0, 1}).
//
// Shared-memory operands (K-major, "no transpose"): an element (row r, byte kb of the row's
// K extent) of a descriptor with start s lies at s + (r / 8) * SBO + (r % 8) * 16 +
// (kb / 16) * LBO + kb % 16 without swizzle; with a swizzle of W bytes at a = s + (r / 8) *
// SBO + (r % 8) * W + kb, bits [4, 4 + log2(W / 16)) of a XORed with bits [7, ...).
#pragma once

namespace kiln {

// The tensor map a kernel reads: the runtime's CUtensorMap (128 bytes, 64-byte aligned),
// passed as a buffer argument (DESIGN.md: tensor maps).
struct alignas(64) TensorMap {
  u64 opaque[16];
};
KILN_FN const TensorMap* tensor_map_arg(const KernelArgs& a, int i) {
  return static_cast<const TensorMap*>(a.p[i]);
}

template <class T> KILN_FN u32 smem_address(Shared<T> s) {
  return u32(__cvta_generic_to_shared(s.p));
}

// ---- mbarrier ----------------------------------------------------------------------------------
KILN_FN void mbarrier_init(Shared<u64> bar, u32 count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_address(bar)), "r"(count));
}
KILN_FN void mbarrier_arrive(Shared<u64> bar) {
  asm volatile(
      "{\n.reg .b64 st;\nmbarrier.arrive.shared::cta.b64 st, [%0];\n}" ::"r"(smem_address(bar))
      : "memory");
}
KILN_FN void mbarrier_arrive_expect_tx(Shared<u64> bar, u32 bytes) {
  asm volatile("{\n.reg .b64 st;\nmbarrier.arrive.expect_tx.shared::cta.b64 st, [%0], %1;\n}" ::"r"(
                   smem_address(bar)),
               "r"(bytes)
               : "memory");
}
KILN_FN void mbarrier_wait(Shared<u64> bar, u32 parity) {
  const u32 a = smem_address(bar);
  u32 done = 0;
  do {
    asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                 "selp.u32 %0, 1, 0, p;\n}"
                 : "=r"(done)
                 : "r"(a), "r"(parity & 1u)
                 : "memory");
  } while (!done);
}
KILN_FN void fence_barrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

// ---- proxies, election, registers ---------------------------------------------------------
KILN_FN void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
KILN_FN bool elect_one() {
  u32 pred = 0;
  asm volatile(
      "{\n.reg .pred p;\n.reg .b32 r;\nelect.sync r|p, 0xffffffff;\nselp.u32 %0, 1, 0, p;\n}"
      : "=r"(pred));
  return pred != 0;
}
template <u32 N> KILN_FN void setmaxnreg_inc() {
  static_assert(N >= 24 && N <= 256 && N % 8 == 0, "setmaxnreg: 24..256, a multiple of 8");
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(N));
}
template <u32 N> KILN_FN void setmaxnreg_dec() {
  static_assert(N >= 24 && N <= 256 && N % 8 == 0, "setmaxnreg: 24..256, a multiple of 8");
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(N));
}

// ---- TMA ----------------------------------------------------------------------------------------
template <class T, class... C>
KILN_FN void tma_load(Shared<T> dst, const TensorMap* map, Shared<u64> bar, C... coords) {
  static_assert(sizeof...(C) >= 1 && sizeof...(C) <= 5, "tma_load: 1 to 5 coordinates");
  const int c[5] = {int(coords)...};
  const u32 d = smem_address(dst), b = smem_address(bar);
  const u64 m = reinterpret_cast<u64>(map);
  constexpr int kRank = int(sizeof...(C));
  if constexpr (kRank == 1)
    asm volatile("cp.async.bulk.tensor.1d.shared::cluster.global.mbarrier::complete_tx::bytes "
                 "[%0], [%1, {%3}], [%2];" ::"r"(d),
                 "l"(m), "r"(b), "r"(c[0])
                 : "memory");
  else if constexpr (kRank == 2)
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes "
                 "[%0], [%1, {%3, %4}], [%2];" ::"r"(d),
                 "l"(m), "r"(b), "r"(c[0]), "r"(c[1])
                 : "memory");
  else if constexpr (kRank == 3)
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes "
                 "[%0], [%1, {%3, %4, %5}], [%2];" ::"r"(d),
                 "l"(m), "r"(b), "r"(c[0]), "r"(c[1]), "r"(c[2])
                 : "memory");
  else if constexpr (kRank == 4)
    asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes "
                 "[%0], [%1, {%3, %4, %5, %6}], [%2];" ::"r"(d),
                 "l"(m), "r"(b), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3])
                 : "memory");
  else
    asm volatile("cp.async.bulk.tensor.5d.shared::cluster.global.mbarrier::complete_tx::bytes "
                 "[%0], [%1, {%3, %4, %5, %6, %7}], [%2];" ::"r"(d),
                 "l"(m), "r"(b), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]), "r"(c[4])
                 : "memory");
}

// Im2col mode (a 4-D map encoded by cuTensorMapEncodeIm2col: C, W, H, N): the map's pixels
// per column from position (c, w, h, n) in its bounding box, each read at the filter offsets
// (w_off, h_off) (runtime/emu/tensor_map.h).
template <class T>
KILN_FN void tma_load_im2col(Shared<T> dst, const TensorMap* map, Shared<u64> bar, int c, int w,
                             int h, int n, u16 w_off, u16 h_off) {
  asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes "
               "[%0], [%1, {%3, %4, %5, %6}], [%2], {%7, %8};" ::"r"(smem_address(dst)),
               "l"(reinterpret_cast<u64>(map)), "r"(smem_address(bar)), "r"(c), "r"(w), "r"(h),
               "r"(n), "h"(w_off), "h"(h_off)
               : "memory");
}

// ---- clusters (sm_90) -------------------------------------------------------------------------
// A kernel runs in clusters when its entry says so (KILN_KERNEL_CLUSTER, kiln.cuh) and its
// launch is a multiple of that (Kernel::cluster). The CTAs of a cluster are co-scheduled;
// a CTA may arrive on a peer's mbarriers and a multicast TMA writes every CTA of its mask.
KILN_FN u32 cluster_ctarank() {
  u32 r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
KILN_FN u32 cluster_size() {
  u32 r;
  asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(r));
  return r;
}
// Every thread of every CTA of the cluster (those not exited): release what this thread
// wrote (its mbarrier inits included), acquire what the others did. A CTA must not exit
// while a peer may still arrive on its barriers or write its shared memory: kernels end
// with one.
KILN_FN void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release;\n"
               "barrier.cluster.wait.acquire;" ::
                   : "memory");
}
// An arrival on the mbarrier at `bar`'s offset in CTA `cta` of this cluster (this CTA's own
// when cta is its rank). The default semantics (release at CTA scope): what it orders is this
// warp's finished wgmma reads of its own stage before the peer's next copy into it. An explicit
// .release.cluster compiled to MEMBAR.ALL.GPU before every arrival, which waits for every store
// in flight (the previous tile's epilogue): the H100 run of 2026-11-27 measured clustered
// resnet50 at 0.51x (b32) and 0.71x (b256) of the same plan without clusters.
KILN_FN void mbarrier_arrive_cluster(Shared<u64> bar, u32 cta) {
  asm volatile("{\n.reg .b32 remote;\nmapa.shared::cluster.u32 remote, %0, %1;\n"
               "mbarrier.arrive.shared::cluster.b64 _, [remote];\n}" ::"r"(
                   smem_address(bar)),
               "r"(cta)
               : "memory");
}
// A tiled TMA load multicast: the box lands at `dst`'s offset in every CTA of `cta_mask` (bit
// r: rank r), each completing its bytes on the mbarrier at `bar`'s offset in that CTA.
template <class T, class... C>
KILN_FN void tma_load_multicast(Shared<T> dst, const TensorMap* map, Shared<u64> bar, u16 cta_mask,
                                C... coords) {
  static_assert(sizeof...(C) == 2 || sizeof...(C) == 4, "tma_load_multicast: 2 or 4 coordinates");
  const int c[4] = {int(coords)...};
  const u32 d = smem_address(dst), b = smem_address(bar);
  const u64 m = reinterpret_cast<u64>(map);
  if constexpr (sizeof...(C) == 2)
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 ".multicast::cluster [%0], [%1, {%4, %5}], [%2], %3;" ::"r"(d),
                 "l"(m), "r"(b), "h"(cta_mask), "r"(c[0]), "r"(c[1])
                 : "memory");
  else
    asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 ".multicast::cluster [%0], [%1, {%4, %5, %6, %7}], [%2], %3;" ::"r"(d),
                 "l"(m), "r"(b), "h"(cta_mask), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3])
                 : "memory");
}

// ---- wgmma --------------------------------------------------------------------------------------
template <int N> struct WgmmaAcc {
  static_assert(N >= 8 && N <= 256 && N % 8 == 0, "wgmma N: 8..256 by 8");
  static constexpr int kRegs = N / 2;
  float r[kRegs];
  KILN_FN float& operator[](int i) { return r[i]; }
};

template <class T>
KILN_FN u64 wgmma_desc(Shared<T> start, int swizzle, u32 lbo_bytes, u32 sbo_bytes) {
  const u64 mode = swizzle == 128 ? 1 : swizzle == 64 ? 2 : swizzle == 32 ? 3 : 0;
  return u64((smem_address(start) & 0x3ffffu) >> 4) | u64((lbo_bytes >> 4) & 0x3fffu) << 16 |
         u64((sbo_bytes >> 4) & 0x3fffu) << 32 | mode << 62;
}

// Specialised per N in wgmma_cuda.cuh (tools/gen_wgmma_cuda.py).
template <int N> KILN_FN void wgmma(WgmmaAcc<N>& d, u64 da, u64 db, bool accumulate, f16);
template <int N> KILN_FN void wgmma(WgmmaAcc<N>& d, u64 da, u64 db, bool accumulate, bf16);
template <int N> KILN_FN void wgmma(WgmmaAcc<N>& d, u64 da, u64 db, bool accumulate, float);
// Both operands MN-major (imm-trans-a = imm-trans-b = 1): f16 and bf16 only.
template <int N> KILN_FN void wgmma_mn(WgmmaAcc<N>& d, u64 da, u64 db, bool accumulate, f16);
template <int N> KILN_FN void wgmma_mn(WgmmaAcc<N>& d, u64 da, u64 db, bool accumulate, bf16);

KILN_FN void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
KILN_FN void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N> KILN_FN void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}

} // namespace kiln

#include "common/wgmma_cuda.cuh"
