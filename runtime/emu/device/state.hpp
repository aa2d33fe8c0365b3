// The emulator's state as kernel code sees it: the fiber a CUDA thread runs on and the
// block it belongs to, plus the out-of-line entry points (defined in launch.cpp) that
// kernel code calls into. Each fiber's header sits in its aligned stack slot, so the
// running fiber is found from the stack pointer alone: no thread-local storage, no copying
// at switches.
#pragma once

#include "runtime/emu/device/hopper_state.hpp"
#include "runtime/emu/device/vector_types.hpp"
#include "runtime/emu/launch_abi.h"

#include <cstddef>
#include <cstdint>

// Fibers switch by a few instructions of assembly on x86-64, by ucontext elsewhere (or when
// KILN_EMU_UCONTEXT is defined, to test that path).
#if defined(__x86_64__) && !defined(KILN_EMU_UCONTEXT)
#define KILN_EMU_ASM_SWITCH 1
#else
#include <ucontext.h>
#endif

namespace kiln::emu {

using u16 = std::uint16_t;
using u32 = std::uint32_t;
using u64 = std::uint64_t;
using uptr = std::uintptr_t;

inline constexpr std::size_t kSlotBytes = std::size_t(128) << 10; // guard, stack, header
inline constexpr int kMaxThreads = 1024;
inline constexpr int kWarp = 32;
inline constexpr std::size_t kMaxShared = 232448; // the largest per-block opt-in (sm_90)
inline constexpr int kMaxSharedSites = 64;
inline constexpr int kMaxPendingCopies = 128; // cp.async copies in flight per thread

enum class Wait : std::uint8_t { None, Barrier, Warp, Done, Mbarrier, Warpgroup, Cluster };
enum class WarpOp : std::uint8_t {
  ShflIdx,
  ShflXor,
  ShflDown,
  Ballot,
  LdmatrixRows, // ldmatrix: a shuffle of the row addresses, checked for bank conflicts
  MmaF16,
  MmaBf16,
  MmaTf32,
  Wgmma, // warpgroup collectives (hopper_ops.hpp)
  SetMaxNreg
};

// Where a thread waits (barrier, warp collective): the caller's file and line, taken by a
// default argument (std::source_location needs clang 15 with libstdc++).
struct Site {
  const char* file;
  unsigned line;
  static constexpr Site current(const char* file = __builtin_FILE(),
                                unsigned line = __builtin_LINE()) {
    return Site{file, line};
  }
};

// A KILN_SHARED_ARRAY declaration; its address identifies the array within a block.
struct SharedSite {
  const char* name;
  const char* file;
  int line;
};

// Per byte of the shared arena, for the init and race checks. A stamp is the barrier epoch
// of the access; an epoch before the block's first one means "not in this block".
struct Shadow {
  u32 wstamp;
  u16 writer; // linear thread id, kAtomicWriter, or | kPendingCopy while a cp.async is unwaited
  u16 reader; // linear thread id or kManyReaders
  u32 rstamp;
};
inline constexpr u16 kPendingCopy = 0x8000;
inline constexpr u16 kAtomicWriter = 0x7ffe;
inline constexpr u16 kManyReaders = 0xffff;
// Shadow::reader: several lanes of warp w read it since a __syncwarp() (kWarpReaders | w).
inline constexpr u16 kWarpReaders = 0xc000;

struct PendingCopy {
  u32 offset; // arena byte offset of the 16 bytes
  u32 group;  // the cp.async group the copy belongs to once committed
};

struct Block;
struct LaunchState;

// A thread-block cluster (sm_90): the CTAs a worker runs together, their fibers interleaved.
// A launch without clusters runs each block as a cluster of one (as the hardware does).
inline constexpr int kMaxClusterCtas = 8; // the portable maximum
struct Cluster {
  Block* cta[kMaxClusterCtas]; // by rank (x fastest within the cluster's dims)
  int size;
  int alive;   // threads of all its CTAs not exited
  int arrived; // threads waiting at cluster_sync
};

// One CUDA thread. Lives in the header of its stack slot (see fiber_in_slot).
struct Fiber {
  void* sp; // saved stack pointer while switched out
  Block* block;
  uint3 tid;
  int linear;
  Wait wait;
  WarpOp op;
  Site site; // where it waits (barrier or warp collective)
  // Warp collective operands and results.
  int param;
  int width;
  u64 value;
  u32 in[10];
  u32 out[4];
  // cp.async copies issued and not yet waited for (race checks only).
  int npending;
  u32 open_group;
  PendingCopy* pending; // kMaxPendingCopies entries, owned by the worker
  // __syncwarp()s this thread has passed: a byte a lane of its warp wrote (or read) before
  // one of them is ordered before this thread's later accesses (race checks, checks.hpp).
  u32 warp_syncs;
  HopperFiber hop;
#if !defined(KILN_EMU_ASM_SWITCH)
  ucontext_t ctx;
#endif
};

// The block a worker is running; reset at each block start.
struct Block {
  uint3 block_idx;
  dim3 block_dim;
  dim3 grid_dim;
  unsigned checks;
  const KilnEmuLaunch* launch;
  LaunchState* run;
  u64 linear_block;
  u64 order;        // the cluster's number * its size + rank: which report wins (report.hpp)
  Cluster* cluster; // the cluster it runs in (of one without a cluster launch)
  u32 cluster_rank; // %cluster_ctarank
  // Shared memory: [dynamic region][static arrays in order of first declaration].
  char* arena;
  Shadow* shadow;
  std::size_t dyn_bytes;
  std::size_t static_top;
  int nsites;
  const SharedSite* site_key[kMaxSharedSites];
  std::size_t site_offset[kMaxSharedSites];
  std::size_t site_bytes[kMaxSharedSites];
  u32 epoch;            // current barrier epoch
  u32 block_epoch;      // epoch at block start
  PendingCopy* pending; // per thread, kMaxPendingCopies each (race checks only)
  // Per arena byte, its last writer's and last reader's warp_syncs at the access:
  // [0, kMaxShared) written, [kMaxShared, 2 kMaxShared) read (race checks only).
  u32* warp_stamp;
  HopperBlock hop;
  // Scheduling.
  char* slots;
  int nthreads;
  int alive;
  int arrived;
  int warp_arrived[kMaxThreads / kWarp];
  int warp_exited[kMaxThreads / kWarp];
  bool aborted;
  void* sched_sp;
#if !defined(KILN_EMU_ASM_SWITCH)
  ucontext_t sched_ctx;
#endif
};

// A slot is [guard page][stack, growing down][Fiber], so that a fiber's header and the top of
// its stack share a page. Slots are kSlotBytes-aligned, so the same offset in every slot
// would map to the same cache set: the header sits at a per-slot colour, one of 64 cache
// lines, computed from the slot's address.
inline constexpr std::size_t kColours = 64;
inline constexpr std::size_t kTopBytes = ((kColours - 1) * 64 + sizeof(Fiber) + 63) & ~63;
inline std::size_t slot_colour(uptr slot) { return (slot / kSlotBytes) % kColours * 64; }
inline Fiber* fiber_in_slot(uptr slot) {
  return reinterpret_cast<Fiber*>(slot + kSlotBytes - kTopBytes + slot_colour(slot));
}

// The fiber running on this stack.
inline Fiber* self() {
  uptr sp;
#if defined(__x86_64__)
  __asm__("movq %%rsp, %0" : "=r"(sp));
#else
  sp = reinterpret_cast<uptr>(__builtin_frame_address(0));
#endif
  return fiber_in_slot(sp & ~uptr(kSlotBytes - 1));
}
inline Block& block() { return *self()->block; }

// ---- defined in launch.cpp ------------------------------------------------------------------
// Private to each kernel library (several may be loaded), whatever its default visibility.
#pragma GCC visibility push(hidden)
// Stops the launch with a report about the calling thread; never returns.
[[noreturn]] void fail(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
[[noreturn]] void global_fault(uptr addr, std::size_t size, std::size_t align, uptr lo, uptr hi,
                               int arg, const char* what);
[[noreturn]] void shared_fault(uptr addr, std::size_t size, std::size_t align, uptr lo, uptr hi,
                               const SharedSite* site);
void barrier(Site where);
void cluster_barrier(Site where);
void warp_collective(Fiber& f, WarpOp op, Site where);
void* shared_alloc(const SharedSite* site, std::size_t bytes);
// Shadow updates (checks on): plain read/write, an atomic read-modify-write, a cp.async.
void shadow_read(const void* p, std::size_t n);
void shadow_write(const void* p, std::size_t n);
void shadow_atomic(const void* p, std::size_t n);
void shadow_copy_async(const void* p);
void async_commit();
void async_wait(int n);
// Hopper (hopper_ops.hpp).
void mbar_init(void* bar, unsigned count);
void mbar_arrive(void* bar, long long tx);
void mbar_wait(void* bar, unsigned parity, Site where);
void tma_load(void* dst, const void* map, void* bar, const int* coords, int rank);
void tma_load_im2col(void* dst, const void* map, void* bar, const int* coords,
                     const unsigned* offsets, int rank);
// Clusters (cluster.hpp): an arrival on CTA `cta`'s mbarrier at bar's offset; a TMA load
// multicast to the CTAs of `mask`.
void mbar_arrive_remote(void* bar, unsigned cta);
void tma_load_multicast(void* dst, const void* map, void* bar, unsigned mask, const int* coords,
                        int rank);
void warpgroup_collective(Fiber& f, WarpOp op, Site where);
void fence_proxy_async();
void check_wgmma_acc(const void* acc, unsigned pending);
void wgmma_retire(Fiber& f, unsigned done_before);
// A raw pointer used by an atomic (rmw) or __ldg: checked against the launch's buffers and
// the block's shared memory (where an atomic also updates the shadow).
void check_pointer(const void* p, std::size_t size, bool rmw, const char* what);
#pragma GCC visibility pop

} // namespace kiln::emu
