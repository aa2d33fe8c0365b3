// CUDA features the emulator does not provide. Using one is a compile error that names it,
// never a silent difference from the device: each function is a template whose body fails
// a dependent static_assert when called; declaration keywords become an identifier that
// reads as the message.
#pragma once

#include "runtime/emu/device/shared_ref.hpp" // kiln::emu::kNotEmulated

#define KILN_EMU_NOT_EMULATED(name)                                                                \
  template <class... A> inline int name(A&&...) {                                                  \
    static_assert(::kiln::emu::kNotEmulated<A...>, "kiln emu: " #name " is not emulated");         \
    return 0;                                                                                      \
  }

// Warp collectives other than full-warp shfl / shfl_xor / shfl_down / ballot.
KILN_EMU_NOT_EMULATED(__shfl_up_sync)
KILN_EMU_NOT_EMULATED(__shfl)
KILN_EMU_NOT_EMULATED(__shfl_up)
KILN_EMU_NOT_EMULATED(__shfl_down)
KILN_EMU_NOT_EMULATED(__shfl_xor)
KILN_EMU_NOT_EMULATED(__syncwarp)
KILN_EMU_NOT_EMULATED(__activemask)
KILN_EMU_NOT_EMULATED(__any_sync)
KILN_EMU_NOT_EMULATED(__all_sync)
KILN_EMU_NOT_EMULATED(__uni_sync)
KILN_EMU_NOT_EMULATED(__match_any_sync)
KILN_EMU_NOT_EMULATED(__match_all_sync)
KILN_EMU_NOT_EMULATED(__reduce_add_sync)
KILN_EMU_NOT_EMULATED(__reduce_min_sync)
KILN_EMU_NOT_EMULATED(__reduce_max_sync)
KILN_EMU_NOT_EMULATED(__reduce_and_sync)
KILN_EMU_NOT_EMULATED(__reduce_or_sync)
KILN_EMU_NOT_EMULATED(__reduce_xor_sync)
// Barrier variants and memory fences.
KILN_EMU_NOT_EMULATED(__syncthreads_count)
KILN_EMU_NOT_EMULATED(__syncthreads_and)
KILN_EMU_NOT_EMULATED(__syncthreads_or)
KILN_EMU_NOT_EMULATED(__threadfence_block)
KILN_EMU_NOT_EMULATED(__threadfence_system)
// Atomics other than atomicAdd.
KILN_EMU_NOT_EMULATED(atomicCAS)
KILN_EMU_NOT_EMULATED(atomicExch)
KILN_EMU_NOT_EMULATED(atomicSub)
KILN_EMU_NOT_EMULATED(atomicMin)
KILN_EMU_NOT_EMULATED(atomicMax)
KILN_EMU_NOT_EMULATED(atomicInc)
KILN_EMU_NOT_EMULATED(atomicDec)
KILN_EMU_NOT_EMULATED(atomicAnd)
KILN_EMU_NOT_EMULATED(atomicOr)
KILN_EMU_NOT_EMULATED(atomicXor)
KILN_EMU_NOT_EMULATED(atomicAdd_block)
KILN_EMU_NOT_EMULATED(atomicAdd_system)
// Timers, cache-hinted loads and stores, address spaces, textures, pipelines.
KILN_EMU_NOT_EMULATED(clock64)
KILN_EMU_NOT_EMULATED(__nanosleep)
KILN_EMU_NOT_EMULATED(__prof_trigger)
KILN_EMU_NOT_EMULATED(__brkpt)
KILN_EMU_NOT_EMULATED(__ldca)
KILN_EMU_NOT_EMULATED(__ldcg)
KILN_EMU_NOT_EMULATED(__ldcs)
KILN_EMU_NOT_EMULATED(__ldlu)
KILN_EMU_NOT_EMULATED(__ldcv)
KILN_EMU_NOT_EMULATED(__stwb)
KILN_EMU_NOT_EMULATED(__stcg)
KILN_EMU_NOT_EMULATED(__stcs)
KILN_EMU_NOT_EMULATED(__stwt)
KILN_EMU_NOT_EMULATED(__cvta_generic_to_shared)
KILN_EMU_NOT_EMULATED(__cvta_shared_to_generic)
KILN_EMU_NOT_EMULATED(__isShared)
KILN_EMU_NOT_EMULATED(__isGlobal)
KILN_EMU_NOT_EMULATED(tex1Dfetch)
KILN_EMU_NOT_EMULATED(tex1D)
KILN_EMU_NOT_EMULATED(tex2D)
KILN_EMU_NOT_EMULATED(tex3D)
KILN_EMU_NOT_EMULATED(surf2Dread)
KILN_EMU_NOT_EMULATED(surf2Dwrite)
KILN_EMU_NOT_EMULATED(__pipeline_memcpy_async)
KILN_EMU_NOT_EMULATED(__pipeline_commit)
KILN_EMU_NOT_EMULATED(__pipeline_wait_prior)
KILN_EMU_NOT_EMULATED(__dp4a)
KILN_EMU_NOT_EMULATED(__dp2a_lo)
KILN_EMU_NOT_EMULATED(__dp2a_hi)
// Thread-block cluster intrinsics (sm_90): distributed shared memory (ld/st.shared::cluster
// through a mapped address), cluster ids and split cluster barriers. Emulated: kiln's
// cluster_ctarank, cluster_size, cluster_sync, mbarrier_arrive_cluster, tma_load_multicast.
KILN_EMU_NOT_EMULATED(__cluster_map_shared_rank)
KILN_EMU_NOT_EMULATED(__cluster_query_shared_rank)
KILN_EMU_NOT_EMULATED(__cluster_map_shared_multicast)
KILN_EMU_NOT_EMULATED(__clusterDimIsSpecified)
KILN_EMU_NOT_EMULATED(__clusterDim)
KILN_EMU_NOT_EMULATED(__clusterIdx)
KILN_EMU_NOT_EMULATED(__clusterGridDimInClusters)
KILN_EMU_NOT_EMULATED(__clusterRelativeBlockIdx)
KILN_EMU_NOT_EMULATED(__clusterRelativeBlockRank)
KILN_EMU_NOT_EMULATED(__clusterSizeInBlocks)
KILN_EMU_NOT_EMULATED(__cluster_barrier_arrive)
KILN_EMU_NOT_EMULATED(__cluster_barrier_arrive_relaxed)
KILN_EMU_NOT_EMULATED(__cluster_barrier_wait)

#undef KILN_EMU_NOT_EMULATED

// Declaration keywords: shared memory only through KILN_SHARED_ARRAY / kiln::dynamic_shared
// (so that it can be checked), no constant or managed memory, no inline assembly.
#define __shared__ kiln_emu_error_raw___shared___is_not_emulated_use_KILN_SHARED_ARRAY
#define __constant__ kiln_emu_error___constant___is_not_emulated
#define __managed__ kiln_emu_error___managed___is_not_emulated
#define asm kiln_emu_error_inline_asm_is_not_emulated
