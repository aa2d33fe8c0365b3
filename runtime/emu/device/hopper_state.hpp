// The emulator's state for Hopper's asynchronous machinery (mbarriers, TMA, wgmma), kept in
// each Fiber and Block (state.hpp). Semantics: hopper_ops.hpp; kernel API: hopper_emu.hpp.
#pragma once

#include <cstdint>

namespace kiln::emu {

// Per block: the emulator's table, not a hardware limit (an mbarrier is 8 bytes of shared
// memory). The Hopper conv's ring of 16 narrow stages with tf32 rounding holds 48.
inline constexpr int kMaxMbarriers = 64;
inline constexpr int kMaxWarpgroups = 8; // 1024 threads / 128
inline constexpr int kWarpgroup = 128;

// One mbarrier (PTX ISA "mbarrier"): an expected arrival count, the arrivals and transaction
// bytes still pending in the current phase, and how many phases have completed (the
// current phase's parity is phases & 1).
struct Mbarrier {
  std::uint32_t offset;  // arena byte offset of its 8 bytes
  std::uint32_t count;   // arrivals per phase
  std::uint32_t pending; // arrivals still missing in this phase
  std::int64_t tx;       // transaction bytes expected and not yet completed (may dip < 0)
  std::uint32_t phases;  // completed phases
};

struct HopperFiber {
  std::uint32_t proxy_fences; // fence.proxy.async executed by this thread
  std::uint32_t wg_open;      // wgmma groups committed by this thread (the open one's id)
  std::uint32_t wg_done;      // wgmma groups below this id have completed (wait_group)
  std::uint32_t maxnreg;      // setmaxnreg's last value (0: none)
  // Per mbarrier slot, this thread's last arrival: the phase it arrived in and its
  // proxy_fences then (0: none). An arrival releases the thread's earlier stores to whoever
  // waits for that phase (mbarrier.arrive is a release, the wait an acquire).
  std::uint32_t arrived_phase[kMaxMbarriers];
  std::uint32_t arrived_fences[kMaxMbarriers];
};

// Per shared byte, in `tag` (race checks only): 0 not tracked; kTagAsync | slot << 24 |
// phase for bytes a TMA wrote (the mbarrier slot and the phase it completes); otherwise
// the writing thread's proxy_fences + 1 at the time of an ordinary store.
inline constexpr std::uint32_t kTagAsync = 0x80000000u;
inline constexpr std::uint16_t kAsyncWriter = 0x7ffd; // Shadow::writer of a TMA-written byte

// A wgmma issued and not yet covered by a wait_group: the emulator computes it at issue,
// and at the wait checks that the shared memory it read is unchanged (on the device it may
// read any time until then), so a stage released or rewritten too early is reported.
inline constexpr int kMaxInflight = 32; // per warpgroup
struct InflightWgmma {
  std::uint64_t da, db;
  std::uint64_t fingerprint; // of the operand bytes and their shadow state at issue
  std::uint32_t group;
  int n, kind;
  int waited; // threads of the warpgroup whose wgmma_wait has covered it
};

struct HopperBlock {
  InflightWgmma inflight[kMaxWarpgroups][kMaxInflight];
  int ninflight[kMaxWarpgroups];
  Mbarrier bars[kMaxMbarriers];
  int nbars;
  int wg_arrived[kMaxWarpgroups];
  // Per mbarrier slot, for clusters (cluster.hpp): 1 + the phase that a peer CTA's arrival or
  // multicast contributed to and no thread of this CTA has waited for since (0: none), and
  // that peer's rank and what it did (0 arrival, 1 multicast). Uncovered when the CTA exits,
  // and not cleared by a cluster_sync, it is reported.
  std::uint32_t remote_need[kMaxMbarriers];
  std::uint8_t remote_from[kMaxMbarriers];
  std::uint8_t remote_kind[kMaxMbarriers];
  std::uint32_t* tag;      // kMaxShared entries (race checks only)
  std::uint32_t* observed; // [thread][slot]: phases a thread saw complete (race checks)
};

} // namespace kiln::emu
