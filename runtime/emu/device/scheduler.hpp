// Running one cluster of blocks (included by launch.cpp only; a single block without a
// cluster launch): the threads of its blocks are fibers, run round-robin in thread order,
// each until it waits (barrier or warp collective) or exits; block after block in rank
// order, each until none of its threads can proceed.
// A barrier completes when every thread still running has arrived (threads that returned no
// longer count, as on sm_70+); all of them must be at the same __syncthreads. A warp
// collective completes when every lane of the warp has arrived; cluster_sync when every
// running thread of the cluster has (cluster.hpp). When nothing can run and threads remain,
// the cluster is deadlocked: reported with where each thread of each block waits.
#pragma once

#include "runtime/emu/device/checks.hpp"
#include "runtime/emu/device/cluster.hpp"
#include "runtime/emu/device/hopper_ops.hpp"
#include "runtime/emu/device/warp_ops.hpp"

#include <algorithm>
#include <exception>

namespace kiln::emu {

namespace {

void release_barrier(Block& b) {
  const Fiber* first = nullptr;
  for (int i = 0; i < b.nthreads; ++i) {
    const Fiber& f = fiber_at(b, i);
    if (f.wait != Wait::Barrier) continue;
    if (!first)
      first = &f;
    else if (!same_site(f.site, first->site))
      fail("barrier divergence (a deadlock on the device): every running thread of the block "
           "must wait at the same __syncthreads: %s",
           describe_waits(b, 0, b.nthreads).c_str());
  }
  for (int i = 0; i < b.nthreads; ++i) {
    Fiber& f = fiber_at(b, i);
    if (f.wait == Wait::Barrier) f.wait = Wait::None;
  }
  b.arrived = 0;
  ++b.epoch;
}

void thread_exit(Fiber& f) {
  Block& b = *f.block;
  const int w = f.linear / kWarp;
  f.wait = Wait::Done;
  if (b.warp_arrived[w] > 0)
    fail("this thread exits while lanes of its warp wait at a warp collective (every lane "
         "must arrive): %s",
         describe_waits(b, w * kWarp, std::min(b.nthreads, (w + 1) * kWarp)).c_str());
  --b.alive;
  ++b.warp_exited[w];
  if (b.arrived > 0 && b.arrived == b.alive) release_barrier(b);
  Cluster& c = *b.cluster;
  if (b.alive == 0 && c.size > 1) check_cta_exit(b);
  --c.alive;
  if (c.arrived > 0 && c.arrived == c.alive) release_cluster(c);
}

[[noreturn]] void fiber_main() {
  Fiber& f = *self();
  const LaunchState& st = *f.block->run;
  std::string error;
  try {
    st.entry(st.args);
  } catch (const std::exception& e) {
    error = e.what(); // reported outside the handler: fail() never returns
  } catch (...) {
    error = "unknown exception";
  }
  if (!error.empty()) fail("the kernel threw: %s", error.c_str());
  thread_exit(f);
  switch_to_scheduler(f);
  __builtin_trap(); // an exited fiber is never resumed
}

} // namespace

void barrier(Site where) {
  Fiber& f = *self();
  Block& b = *f.block;
  f.wait = Wait::Barrier;
  f.site = where;
  if (++b.arrived == b.alive) release_barrier(b);
  switch_to_scheduler(f);
}

void warp_collective(Fiber& f, WarpOp op, Site where) {
  Block& b = *f.block;
  const int w = f.linear / kWarp, first = w * kWarp;
  const int n = std::min(kWarp, b.nthreads - first);
  f.op = op;
  f.site = where;
  if (b.warp_exited[w] > 0)
    fail("%s at %s, but lanes of this warp have exited (every lane must arrive): %s", op_name(op),
         site_name(where).c_str(), describe_waits(b, first, first + n).c_str());
  if (op == WarpOp::MmaF16 || op == WarpOp::MmaBf16 || op == WarpOp::MmaTf32) {
    if (n < kWarp) fail("%s needs a full warp; this one has %d threads", op_name(op), n);
  } else {
    const u32 lanes = n == kWarp ? ~0u : (1u << n) - 1u;
    if ((f.in[0] & lanes) != lanes)
      fail("%s with mask 0x%08x: masks that leave out lanes of the warp are not emulated",
           op_name(op), f.in[0]);
    if (f.width < 1 || f.width > kWarp || (f.width & (f.width - 1)))
      fail("%s with width %d: not a power of two in [1, 32]", op_name(op), f.width);
  }
  f.wait = Wait::Warp;
  if (++b.warp_arrived[w] == n) complete_warp(b, w);
  switch_to_scheduler(f);
}

// Resets block b of this worker to start block number lb of the launch, whose reports rank
// by `order`.
inline void start_block(Block& b, u64 lb, u64 order) {
  const dim3 g = b.grid_dim, d = b.block_dim;
  b.block_idx = uint3{unsigned(lb % g.x), unsigned(lb / g.x % g.y), unsigned(lb / g.x / g.y)};
  b.linear_block = lb;
  b.order = order;
  b.aborted = false;
  b.alive = b.nthreads;
  b.arrived = 0;
  std::fill(std::begin(b.warp_arrived), std::end(b.warp_arrived), 0);
  std::fill(std::begin(b.warp_exited), std::end(b.warp_exited), 0);
  b.hop.nbars = 0;
  std::fill(std::begin(b.hop.wg_arrived), std::end(b.hop.wg_arrived), 0);
  std::fill(std::begin(b.hop.ninflight), std::end(b.hop.ninflight), 0);
  b.nsites = 0;
  b.static_top = b.dyn_bytes;
  ++b.epoch; // a new epoch: bytes stamped earlier are "not written in this block"
  b.block_epoch = b.epoch;
  for (int i = 0; i < b.nthreads; ++i) {
    Fiber& f = fiber_at(b, i);
    f.block = &b;
    f.tid = uint3{unsigned(i) % d.x, unsigned(i) / d.x % d.y, unsigned(i) / d.x / d.y};
    f.linear = i;
    f.wait = Wait::None;
    f.npending = 0;
    f.open_group = 0;
    f.warp_syncs = 0;
    f.pending = b.pending ? b.pending + std::size_t(i) * kMaxPendingCopies : nullptr;
    f.hop = HopperFiber{};
    prepare_fiber(f, fiber_main);
  }
}

// Runs cluster number cl of the launch (block number cl without clusters) on this worker,
// whose blocks c.cta[0..size) are set up; false when it failed (reported).
inline bool run_cluster(Cluster& c, const LaunchState& st, u64 cl) {
  const int n = c.size;
  c.alive = 0;
  c.arrived = 0;
  for (int r = 0; r < n; ++r) {
    Block& b = *c.cta[r];
    start_block(b, n == 1 ? cl : cluster_block(st, b.grid_dim, cl, r), cl * u64(n) + u64(r));
    c.alive += b.nthreads;
  }
  for (;;) {
    bool ran = false;
    for (int r = 0; r < n; ++r) {
      Block& b = *c.cta[r];
      // In a cluster, a CTA runs until none of its threads can proceed before the next one
      // runs: CTAs get as far apart as their synchronisation allows, so a missing one shows
      // (a stage refilled before a peer released it is read as a later phase's bytes).
      for (bool again = true; again;) {
        again = false;
        for (int i = 0; i < b.nthreads; ++i) {
          Fiber& f = fiber_at(b, i);
          if (f.wait == Wait::Mbarrier && mbar_wait_over(b, f)) f.wait = Wait::None;
          if (f.wait != Wait::None) continue;
          switch_to_fiber(b, f);
          if (b.aborted) return false;
          again = n > 1;
          ran = true;
        }
      }
    }
    if (c.alive == 0) return true;
    if (!ran) {
      record(*c.cta[0], nullptr,
             "deadlock: no thread can proceed: " + describe_cluster_waits(*c.cta[0]));
      return false;
    }
  }
}

} // namespace kiln::emu
