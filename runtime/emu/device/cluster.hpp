// Thread-block clusters (sm_90) in the emulator (included by scheduler.hpp only), as the PTX
// ISA defines them: the CTAs of a cluster run together on one worker, each until none of its
// threads can proceed, then the next (scheduler.hpp: run_cluster). Each CTA keeps its own shared
// memory, shadow, mbarriers and __syncthreads. Between them:
//  - cluster_sync (barrier.cluster.arrive.release + wait.acquire) completes when every
//    thread of every CTA not exited has arrived; for the race checks it starts a new epoch
//    in every CTA, as __syncthreads does in one;
//  - mbarrier_arrive_cluster arrives on the mbarrier at the same shared offset of a peer CTA
//    (a release: the arriving thread lets the others run, as a plain mbarrier_arrive);
//  - tma_load_multicast writes its box at the same shared offset of every CTA of its mask,
//    completing the bytes on each one's mbarrier at the barrier's offset (hopper_ops.hpp:
//    tma_into), with each destination CTA's async-proxy tags.
// A peer CTA that has exited (all its threads returned) may not be arrived on or written:
// undefined on the device, reported here. Distributed shared memory (ld/st.shared::cluster)
// is not emulated.
#pragma once

#include "runtime/emu/device/hopper_ops.hpp"

namespace kiln::emu {

namespace {

void release_cluster(Cluster& c) {
  for (int r = 0; r < c.size; ++r) {
    Block& b = *c.cta[r];
    for (int i = 0; i < b.nthreads; ++i) {
      Fiber& f = fiber_at(b, i);
      if (f.wait == Wait::Cluster) f.wait = Wait::None;
    }
    ++b.epoch; // orders every access before the barrier before every access after it
    std::fill(std::begin(b.hop.remote_need), std::end(b.hop.remote_need), 0u);
  }
  c.arrived = 0;
}

// Peer CTA t of the caller's cluster must still be running for the caller to touch it.
void check_peer_alive(const Block& t, const char* doing) {
  const Block& b = *self()->block;
  if (t.alive == 0)
    fail("CTA %u of the cluster has exited while CTA %u still %s: a CTA must not exit while "
         "its peers may still arrive on its mbarriers or write its shared memory (undefined on "
         "the device): end the kernel with cluster_sync()",
         t.cluster_rank, b.cluster_rank, doing);
}

// Called when the last thread of b exits: every peer's arrival on b's mbarriers and multicast
// into b must be ordered before that (b waited for the phase it contributed to, or a
// cluster_sync followed it), else on the device it may land after b exited.
void check_cta_exit(Block& b) {
  for (int slot = 0; slot < b.hop.nbars; ++slot)
    if (b.hop.remote_need[slot])
      fail("CTA %u of the cluster exits while CTA %u may still %s (phase %u of the mbarrier at "
           "%s: no thread of CTA %u waited for that phase, and no cluster_sync followed): a CTA "
           "must not exit while its peers may still arrive on its mbarriers or write its "
           "shared memory (undefined on the device): end the kernel with cluster_sync()",
           b.cluster_rank, unsigned(b.hop.remote_from[slot]),
           b.hop.remote_kind[slot] ? "multicast a TMA load into it (tma_load_multicast)"
                                   : "arrive on its mbarrier (mbarrier_arrive_cluster)",
           b.hop.remote_need[slot] - 1, shared_place(b, b.hop.bars[slot].offset).c_str(),
           b.cluster_rank);
}

// The linear number and index of the block of rank r in cluster number cl.
u64 cluster_block(const LaunchState& st, dim3 grid, u64 cl, int r) {
  const unsigned* cd = st.cluster_dim;
  const u64 gx = grid.x / cd[0], gy = grid.y / cd[1];
  const u64 x = cl % gx * cd[0] + unsigned(r) % cd[0];
  const u64 y = cl / gx % gy * cd[1] + unsigned(r) / cd[0] % cd[1];
  const u64 z = cl / gx / gy * cd[2] + unsigned(r) / cd[0] / cd[1];
  return x + grid.x * (y + u64(grid.y) * z);
}

} // namespace

void cluster_barrier(Site where) {
  Fiber& f = *self();
  Cluster& c = *f.block->cluster;
  f.wait = Wait::Cluster;
  f.site = where;
  if (++c.arrived == c.alive) release_cluster(c);
  switch_to_scheduler(f);
}

void mbar_arrive_remote(void* p, unsigned cta) {
  Fiber& me = *self();
  Block& b = *me.block;
  const Cluster& c = *b.cluster;
  if (cta >= unsigned(c.size))
    fail("mbarrier_arrive_cluster to CTA %u: the cluster has %d CTA%s (ranks 0..%d)", cta, c.size,
         c.size == 1 ? "" : "s", c.size - 1);
  if (cta == b.cluster_rank) return mbar_arrive(p, 0);
  Block& t = *c.cta[cta];
  check_peer_alive(t, "arrives on its mbarrier (mbarrier_arrive_cluster)");
  Mbarrier& m = t.hop.bars[find_mbar_at(t, arena_offset(b, p), "mbarrier_arrive_cluster")];
  if (m.pending == 0)
    fail("mbarrier_arrive_cluster: more arrivals than the barrier's count (%u) in one phase of "
         "the mbarrier at %s of CTA %u",
         m.count, shared_place(t, m.offset).c_str(), cta);
  --m.pending;
  const int slot = int(&m - t.hop.bars);
  t.hop.remote_need[slot] = m.phases + 1; // to be waited for (or a cluster_sync) before t exits
  t.hop.remote_from[slot] = std::uint8_t(b.cluster_rank);
  t.hop.remote_kind[slot] = 0;
  complete_phase_if_done(m);
  switch_to_scheduler(me); // a release: let the others run first (mbar_arrive)
}

void tma_load_multicast(void* dst, const void* map, void* bar, unsigned mask, const int* coords,
                        int rank) {
  Block& b = *self()->block;
  const Cluster& c = *b.cluster;
  if (mask == 0) fail("tma_load_multicast with an empty CTA mask");
  if (mask >> c.size)
    fail("tma_load_multicast: CTA mask 0x%x names CTA %d, outside the cluster of %d CTA%s", mask,
         31 - __builtin_clz(mask), c.size, c.size == 1 ? "" : "s");
  const std::uint32_t d0 = arena_offset(b, dst), bar_off = arena_offset(b, bar);
  for (int r = 0; r < c.size; ++r) {
    if (!(mask >> r & 1u)) continue;
    Block& t = *c.cta[r];
    if (&t != &b) check_peer_alive(t, "multicasts a TMA load into it (tma_load_multicast)");
    tma_into(t, d0, map, bar_off, coords, rank, "tma_load_multicast");
  }
}

} // namespace kiln::emu
