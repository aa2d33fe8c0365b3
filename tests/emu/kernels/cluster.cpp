// Test kernels for thread-block clusters (sm_90; hopper_emu.hpp / hopper_cuda.cuh): cluster
// ranks and sizes, cluster_sync, and a producer-consumer ring in which every CTA of a cluster
// multicasts its part of each tile into all of them, as CUTLASS does with its weight tiles.
// Also planted bugs the emulator must report.
#include "common/kiln.cuh"

using namespace kiln;

// args: 0 out (u32[blocks * 2]: rank, size per block), 1 int[1] flags. Flag 1 (planted):
// CTA 1 waits on an mbarrier nobody arrives on while the others wait at cluster_sync.
extern "C" __global__ void cluster_ids(KernelArgs args) {
  const auto out = arg<u32>(args, 0);
  const int flags = arg<const int>(args, 1)[0];
  const u32 lb = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  KILN_SHARED_ARRAY(u64, bar, 1);
  if (threadIdx.x == 0) mbarrier_init(bar, 1);
  sync_threads();
  if ((flags & 1) && cluster_ctarank() == 1) mbarrier_wait(bar, 0);
  cluster_sync();
  if (threadIdx.x == 0) {
    out[int(lb * 2)] = cluster_ctarank();
    out[int(lb * 2 + 1)] = cluster_size();
  }
}

// cluster_sync orders plain shared stores before the loads after it (within a CTA: there is
// no distributed shared memory). args: 0 out (int[blocks * 64]), 1 int[1] flags: 1 (planted)
// skips the cluster_sync, a race.
extern "C" __global__ void cluster_sync_orders(KernelArgs args) {
  const auto out = arg<int>(args, 0);
  const int flags = arg<const int>(args, 1)[0];
  KILN_SHARED_ARRAY(int, s, 64);
  const int t = int(threadIdx.x), lb = int(blockIdx.x);
  s[t] = t * 3 + int(cluster_ctarank());
  if (!(flags & 1)) cluster_sync();
  out[lb * 64 + t] = s[t > 0 ? t - 1 : 0];
  cluster_sync(); // the peers' last accesses done before any CTA exits (none here)
}

// A 3-stage ring over tiles of 16 x 32 floats of a [rows, 32] tensor, clusters of n CTAs
// along x, 64 threads: thread 0 produces, warp 1 consumes (thread 32 + c sums column c of
// each tile). CTA r of a cluster multicasts rows [16 / n * r, 16 / n * (r + 1)) of each tile
// into every CTA of the cluster (the map's box is 32 x 16 / n), each CTA's full barrier
// expecting the whole tile; a stage is released to the producers of every CTA
// (mbarrier_arrive_cluster), so a producer refills it only once all consumers of the
// cluster are done with it. Cluster q reads tiles [q * tiles, (q + 1) * tiles).
// args: 0 map, 1 tensor, 2 out (float[blocks * tiles * 32]), 3 int[2]: tiles, flags.
// Planted bugs (flags): 1 no final cluster_sync; 2 stages released to the own producer only
// (a producer refills the peers' stages without their release); 4 the multicast mask names
// rank n too; 8 an arrival on CTA n's empty barrier.
extern "C" __global__ void cluster_pipeline(KernelArgs args) {
  constexpr int kStages = 3, kTile = 16 * 32;
  const TensorMap* map = tensor_map_arg(args, 0);
  const auto out = arg<float>(args, 2);
  const auto p = arg<const int>(args, 3);
  const int tiles = p[0], flags = p[1];
  const u32 rank = cluster_ctarank(), n = cluster_size();
  const int rows = 16 / int(n); // rows of each tile this CTA multicasts
  const auto ring = dynamic_shared<float>(0);
  KILN_SHARED_ARRAY(u64, full, kStages);
  KILN_SHARED_ARRAY(u64, empty, kStages);
  const bool local = flags & 2;
  const int t = int(threadIdx.x);
  if (t == 0) {
    for (int s = 0; s < kStages; ++s) {
      mbarrier_init(full + s, 1);
      mbarrier_init(empty + s, local ? 32 : 32 * n);
    }
    fence_barrier_init();
  }
  cluster_sync(); // the peers' barriers are initialised before anyone arrives on them
  const int row0 = 16 * tiles * int(blockIdx.x / n);
  const u16 mask = u16(((1u << n) - 1) | ((flags & 4) ? 1u << n : 0u));
  if (t == 0) {
    for (int i = 0; i < tiles; ++i) {
      const int s = i % kStages;
      if (i >= kStages) mbarrier_wait(empty + s, u32((i / kStages - 1) & 1));
      mbarrier_arrive_expect_tx(full + s, kTile * 4);
      tma_load_multicast(ring + s * kTile + int(rank) * rows * 32, map, full + s, mask, 0,
                         row0 + 16 * i + rows * int(rank));
    }
  } else if (t >= 32) {
    const int c = t - 32;
    for (int i = 0; i < tiles; ++i) {
      const int s = i % kStages;
      mbarrier_wait(full + s, u32((i / kStages) & 1));
      float sum = 0.0f;
      for (int r = 0; r < 16; ++r)
        sum += ring[s * kTile + r * 32 + c];
      out[(int(blockIdx.x) * tiles + i) * 32 + c] = sum;
      if (local)
        mbarrier_arrive(empty + s);
      else
        for (u32 r = 0; r < n; ++r)
          mbarrier_arrive_cluster(empty + s, r);
      if ((flags & 8) && i == 0) mbarrier_arrive_cluster(empty + s, n);
    }
  }
  if (!(flags & 1)) cluster_sync(); // no CTA exits while a peer may still arrive on it
}

// Planted bug: CTA 0 returns right after the first cluster_sync; CTA 1 passes a second one
// (which completes once CTA 0 has exited), then multicasts a box into both. args as
// cluster_pipeline (the box: 32 x 8 floats).
extern "C" __global__ void cluster_early_exit(KernelArgs args) {
  const TensorMap* map = tensor_map_arg(args, 0);
  const auto ring = dynamic_shared<float>(0);
  KILN_SHARED_ARRAY(u64, full, 1);
  if (threadIdx.x == 0) {
    mbarrier_init(full, 1);
    fence_barrier_init();
  }
  cluster_sync();
  if (cluster_ctarank() == 0) return;
  cluster_sync();
  if (threadIdx.x == 0) {
    mbarrier_arrive_expect_tx(full, 32 * 8 * 4);
    tma_load_multicast(ring, map, full, u16(3), 0, 0);
  }
  mbarrier_wait(full, 0);
}
