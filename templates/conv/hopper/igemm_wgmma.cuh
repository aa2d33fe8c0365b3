// Implicit-GEMM convolution forward for Hopper (sm_90a): TMA loads into a multi-stage ring
// completed by mbarriers, one producer warpgroup (one elected thread issues the copies) and
// CONSUMERS warpgroups computing with wgmma from swizzled shared memory (SWIZZLE), then the
// fused epilogue (bias, residual, activation: epilogue.cuh) through shared memory in 16-byte
// stores.
//
// GEMM view: M = output pixels, N = output channels (O), K = KH * KW * C. x is NHWC, w OHWI
// (its rows are K-major: [O][KH*KW*C]), y NHWC.
//  - B (weights): a 2-D tiled TMA of w as [O][KH*KW*C], box BKC K x BN rows.
//  - A (activations): 4-D tiled TMAs of x, box BKC channels x TQ x TP x 1: a block's TP x TQ
//    output pixels read their inputs for filter tap (r, t) as one box ("tiled gather"), the
//    padding being the copy's out-of-bounds zero fill. With strides SH, SW the input rows
//    a tap reads, SH * p + r - PH, all have one parity ph = (r - PH) mod SH: x is described
//    by SH * SW maps, map (ph, pw) being the rows and columns of that parity ([N][ceil((H -
//    ph) / SH)][ceil((W - pw) / SW)][C], its byte strides SH and SW times x's), read at
//    (c, q0 + floor((t - PW) / SW), p0 + floor((r - PH) / SH), n). Dilation 1; C a multiple
//    of BKC. (im2col mode would need one map for any stride, but the emulator does not
//    interpret it yet, and a kernel that cannot be checked there is not chosen.)
//  - ROW_TILES (optional): a strided 1x1 unpadded conv with H = SH * OH: TP whole output rows
//    of all images' rows as one sequence, one box of a 3-D map (geometry.cuh).
//  - FLAT (optional): a 1x1 stride-1 unpadded conv, or a linear layer (x [N][C], H = W = 1),
//    is a plain GEMM over M = N * OH * OW rows of x: A is one 2-D tiled TMA of x as [M][C],
//    box BKC x BM rows, and a tile is BM consecutive rows, whatever the image or row they
//    fall in (a 7x7 map fills 128-row tiles where 8x8 pixel tiles leave 23% idle).
//  - IM2COL (optional; geometry.cuh): any conv's tiles of BM consecutive GEMM rows, as FLAT's,
//    each tap's A one im2col-mode TMA copy of the tile's BM pixels.
// KBLOCKS (optional, alone, no rounding pass: geometry.cuh): KB k iterations a stage, their A
// blocks then their B blocks.
// Each k iteration is one (r, s, block of BKC = SWIZZLE bytes of channels: 128 bytes, 64
// f16/bf16 or 32 f32, unless C's bytes need a narrower row: 64 or 32): A is TP * TQ rows of
// SWIZZLE bytes (consumer g takes rows 64g..64g+63), B BN rows of SWIZZLE bytes, both in the
// layout the TMA's swizzle writes and wgmma's descriptors of that swizzle read (SBO 8 *
// SWIZZLE; each of the SWIZZLE / 32 k steps, k16 for 16-bit types and k8 for tf32, is +32
// bytes). f32 runs as tf32: the tensor cores read each operand's top 19 bits.
//
// CLUSTER_M, CLUSTER_N (optional, 1 or 2 each; geometry.cuh): a thread-block cluster of
// CLUSTER_M pixel tiles x CLUSTER_N channel blocks. Block (i, j) brings slice i of its weight
// tile (BN / CLUSTER_M rows) by a multicast TMA into the blocks of its column, and slice j of
// its A (TP / CLUSTER_N pixel rows, or BM / CLUSTER_N GEMM rows) into those of its row; each
// block's full barrier expects the whole stage. A stage is free once the consumers of every
// block that writes it have released it: each consumer warp arrives, elected, on the empty
// barrier of every block in its row and column. The kernel starts and ends with a cluster
// barrier: barriers initialised before any peer arrives, no block gone while a peer still
// writes to it or arrives on its barriers.
//
// Cfg: T (f16, bf16, or float for tf32); N, C, H, W, O, KH, KW, SH, SW, PH, PW, OH, OW; TP, TQ
// (TP * TQ = 64 * CONSUMERS); BN (64, 128 or 256); STAGES; CONSUMERS (1 or 2); HAS_BIAS,
// HAS_RESIDUAL, ACT / RELU; B_TF32 and A_TF32 (optional: float weights / activations that
// arrive rounded to tf32, so that only the other is rounded in shared memory, or neither);
// Y_TF32 (optional: the epilogue rounds y to tf32 for readers that are all tf32 convs);
// PINGPONG (optional: the consumers take turns, a tile each, their epilogues overlapping the
// other's wgmmas; geometry.cuh);
// FLAT (optional, above; TP = 1 and TQ = BM, a tile being BM rows of the GEMM); ROW_TILES
// (optional, above; TQ = OW, TP = BM / OW rounded down); SWIZZLE
// (optional: 128, 64 or 32, above; 128 where absent); Y_PITCH
// (optional: y a channel window of a concat's output, its pixels Y_PITCH elements apart);
// SPLIT (optional: split-K completed in the kernel, split_reduce.cuh; alone, not PINGPONG).
// Kernel arguments (M = SH * SW): 0..M-1 x's tensor maps (map
// ph * SW + pw; FLAT: the one 2-D map; ROW_TILES: the one 3-D map, M = 1), M w's tensor map, then
// x, w (what the maps read; named so the buffers stay arguments), y, and bias, residual when
// present; with SPLIT the slices and the tiles' counters (partial, tickets).
#pragma once

#include "common/kiln.cuh"
#include "conv/hopper/epilogue.cuh"
#include "conv/hopper/geometry.cuh"
#include "conv/hopper/split_reduce.cuh"

namespace kiln::hopper_conv {

// The producer, for stages [it0, it1) of one output tile (all ITERS but with SPLIT): for each,
// wait for its ring slot to be free, announce the bytes, issue the copies. `ring_it` counts the
// block's stages over all its tiles: the slot and the barriers' phases follow from it. `rank`:
// the block's in its cluster (0 alone).
template <class Cfg>
KILN_FN void produce(const KernelArgs& args, Shared<u8> ring, Shared<u64> full, Shared<u64> empty,
                     const Tile& tl, int rank, int it0, int it1, int& ring_it) {
  using G = Geometry<Cfg>;
  const TensorMap* wmap = tensor_map_arg(args, G::kArgWMap);
  // IM2COL: the tile's first pixel (n, p, q) as its first tap position (h, w) in x.
  int i2c_n = 0, i2c_h = 0, i2c_w = 0;
  if constexpr (G::IM2COL) {
    const int per_image = Cfg::OH * Cfg::OW, pq = tl.m0 % per_image;
    i2c_n = tl.m0 / per_image;
    i2c_h = pq / Cfg::OW * G::SH - Cfg::PH;
    i2c_w = pq % Cfg::OW * G::SW - Cfg::PW;
  }
  for (int step = it0; step < it1; ++step, ++ring_it) {
    const int it = ring_it, s = it % G::STAGES;
    if (it >= G::STAGES) mbarrier_wait(empty + s, u32((it / G::STAGES - 1) & 1));
    mbarrier_arrive_expect_tx(full + s, u32(G::STAGE_TX));
#pragma unroll
    for (int kb = 0; kb < G::KB; ++kb) {
      const int k_it = step * G::KB + kb, cb = k_it % G::CB, tap = k_it / G::CB;
      const Shared<u8> a = ring + s * G::STAGE_BYTES + kb * G::A_BLOCK,
                       b = ring + s * G::STAGE_BYTES + G::A_BYTES + kb * G::B_BLOCK;
      const int ai = rank / G::CM; // the A slice this block brings (CN > 1)
      const auto [xmap, cr, ct] =
          tap_map<G::SH, G::SW, Cfg::PH, Cfg::PW, G::MAPS>(args, tap / G::KW, tap % G::KW);
      if constexpr (G::IM2COL) // BM pixels from the tile's first, read at the tap's offsets
        tma_load_im2col(a, xmap, full + s, cb * G::BKC, i2c_w, i2c_h, i2c_n, u16(tap % G::KW),
                        u16(tap / G::KW));
      else if constexpr (G::CN > 1) { // this block's slice of A, into the blocks of its row
        if constexpr (G::FLAT)
          tma_load_multicast(a + ai * G::A_SLICE_BYTES, xmap, full + s, row_mask<Cfg>(rank),
                             cb * G::BKC, tl.m0 + ai * G::A_SLICE);
        else
          tma_load_multicast(a + ai * G::A_SLICE_BYTES, xmap, full + s, row_mask<Cfg>(rank),
                             cb * G::BKC, tl.q0 + ct, tl.p0 + cr + ai * G::TP_SLICE, tl.n);
      } else if constexpr (G::FLAT) // rows past M: the copy's zero fill
        tma_load(a, xmap, full + s, cb * G::BKC, tl.m0);
      else if constexpr (G::ROW_TILES) // TP output rows (past the last: zero fill) x OW
        tma_load(a, xmap, full + s, cb * G::BKC, 0, tl.p0);
      else
        tma_load(a, xmap, full + s, cb * G::BKC, tl.q0 + ct, tl.p0 + cr, tl.n);
      if constexpr (G::CM > 1) { // this block's slice of the weight rows, into its column
        const int bi = rank % G::CM;
        tma_load_multicast(b + bi * G::B_SLICE_BYTES, wmap, full + s, column_mask<Cfg>(rank),
                           tap * G::C + cb * G::BKC, tl.o0 + bi * G::B_SLICE);
      } else
        tma_load(b, wmap, full + s, tap * G::C + cb * G::BKC, tl.o0);
    }
  }
}

// Four floats rounded to tf32 in place: one 16-byte shared load and store.
KILN_FN void round4(Shared<Pack<u32, 4>> p, int i) {
  Pack<u32, 4> v = p[i];
  for (int e = 0; e < 4; ++e)
    v.e[e] = float_to_tf32(__uint_as_float(v.e[e]));
  p[i] = v;
}

// tf32: thread t of consumer warpgroup g rounds, in place, its share of the group's 64 A rows
// and its share (of 128 * CONSUMERS) of B, 16 bytes at a time (consecutive threads, consecutive
// chunks: no bank conflicts); the async-proxy fence and the `rounded` barrier, which every
// consumer thread reaches, order those stores before any consumer's wgmma.
template <class Cfg>
KILN_FN void round_stage(Shared<u8> stage, Shared<u64> rounded, int g, int t, u32 parity) {
  using G = Geometry<Cfg>;
  const Shared<Pack<u32, 4>> a = view_as<Pack<u32, 4>>(stage + g * 64 * G::SWZ);
  const Shared<Pack<u32, 4>> b = view_as<Pack<u32, 4>>(stage + G::A_BYTES);
  if constexpr (!a_tf32_of<Cfg>::value) // A_TF32: x rounded by its producer's epilogue
    for (int i = t; i < 64 * G::SWZ / 16; i += 128)
      round4(a, i);
  if constexpr (!b_tf32_of<Cfg>::value) // B_TF32: the weights arrive rounded (prepare phase)
    for (int i = g * 128 + t; i < G::B_BYTES / 16; i += 128 * G::CONSUMERS)
      round4(b, i);
  fence_proxy_async();
  mbarrier_arrive(rounded);
  mbarrier_wait(rounded, parity);
}

// A consumer warp's release of stage s, once the whole warp is past its wgmma wait: alone, one
// arrival on its own block's barrier; in a cluster, lane l < CL arrives on block l's barrier
// where block l shares this block's row or column (writes this stage). empty's count: every
// consumer warp of the CM + CN - 1 blocks that write the stage.
template <class Cfg> KILN_FN void release(Shared<u64> empty, int s, int rank) {
  using G = Geometry<Cfg>;
  if constexpr (G::CL == 1)
    mbarrier_arrive_warp(empty + s);
  else {
    sync_warp();
    const int lane = lane_id();
    if (lane < G::CL && (lane % G::CM == rank % G::CM || lane / G::CM == rank / G::CM))
      mbarrier_arrive_cluster(empty + s, u32(lane));
  }
}

// A consumer warpgroup g, for stages [it0, it1) of one output tile (all ITERS but with SPLIT):
// 64 pixel rows x BN channels in `acc` (rows 64g.. of each stage's A). PINGPONG: the whole tile,
// its rows 0-63 in `acc` and 64-127 in
// `*hi`, its stages the tile's (the other consumer's tiles' stages lie between them in the
// ring); it waits on a stage's full barrier only once the other consumer has waited on all of
// its previous tile's (which then arrives, per warp, on this one's turn: `next_turn` is the
// other's), so that no barrier's phase is one a parity wait cannot tell from two phases
// earlier (a stage ITERS iterations ahead would be). Each stage is released once its wgmmas
// completed; the tile's last one before the epilogue, so the producer can fill it with the
// next tile's data meanwhile.
template <class Cfg>
KILN_FN void consume(WgmmaAcc<Cfg::BN>& acc, WgmmaAcc<Cfg::BN>* hi, Shared<u8> ring,
                     Shared<u64> full, Shared<u64> empty, int g, int rank, Shared<u64> next_turn,
                     int it0, int it1, int& ring_it) {
  const Shared<u64> rounded = empty + Cfg::STAGES; // tf32 only
  using G = Geometry<Cfg>;
  using T = typename Cfg::T;
  for (int k_it = it0; k_it < it1; ++k_it, ++ring_it) {
    const int it = ring_it, s = it % G::STAGES;
    mbarrier_wait(full + s, u32((it / G::STAGES) & 1));
    if constexpr (G::ROUND_TF32)
      round_stage<Cfg>(ring + s * G::STAGE_BYTES, rounded + s, g, thread_linear() % 128,
                       u32((it / G::STAGES) & 1));
    const Shared<u8> a = ring + s * G::STAGE_BYTES + g * 64 * G::SWZ;
    const Shared<u8> b = ring + s * G::STAGE_BYTES + G::A_BYTES;
    wgmma_fence();
#pragma unroll
    for (int kb = 0; kb < G::KB; ++kb)
#pragma unroll
      for (int k = 0; k < G::KSTEPS; ++k) { // a swizzle row of channels: k steps of 32 bytes
        const Shared<u8> ak = a + kb * G::A_BLOCK + 32 * k;
        const u64 db = wgmma_desc(b + kb * G::B_BLOCK + 32 * k, G::SWZ, 16, 8 * G::SWZ);
        const bool accumulate = k_it > it0 || kb > 0 || k > 0;
        wgmma(acc, wgmma_desc(ak, G::SWZ, 16, 8 * G::SWZ), db, accumulate, T{});
        if constexpr (G::PINGPONG)
          wgmma(*hi, wgmma_desc(ak + 64 * G::SWZ, G::SWZ, 16, 8 * G::SWZ), db, accumulate, T{});
      }
    wgmma_commit();
    // One group stays in flight (this stage's) while the next stage's copies are awaited;
    // the previous stage's wgmmas are then done reading it: release that one.
    wgmma_wait<1>();
    if (k_it > it0) release<Cfg>(empty, (it + G::STAGES - 1) % G::STAGES, rank);
  }
  if constexpr (G::PINGPONG) mbarrier_arrive_warp(next_turn); // the other consumer's turn
  wgmma_wait<0>();
  release<Cfg>(empty, (ring_it + G::STAGES - 1) % G::STAGES, rank);
}

// Grid: (blocks, 1, 1); block b computes tiles b, b + blocks, ... of TILES (persistent when
// blocks < TILES: the producer fills the next tile's stages during the epilogue); in clusters
// of CL = CM x CN, cluster c = b / CL computes cluster tiles c, c + blocks / CL, ...
// (cluster_tile): its work units (unit_at), with SPLIT a cluster tile's range of k each;
// THREADS threads; smem_bytes<Cfg>() dynamic.
template <class Cfg> KILN_FN void conv_fwd(const KernelArgs& args) {
  using G = Geometry<Cfg>;
  const Shared<u8> base = dynamic_shared<u8>(0);
  const int pad = int((1024 - smem_address(base) % 1024) % 1024); // swizzle atoms: 1024-aligned
  const Shared<u8> ring = base + pad;
  const Shared<u8> staging = ring + G::STAGES * G::STAGE_BYTES; // the epilogue's (STAGING)
  const Shared<u64> full = view_as<u64>(staging + G::STAGING);
  const Shared<u64> empty = full + G::STAGES;
  const int wg = thread_linear() / 128;
  if constexpr (G::ROW_TILES && G::TILE_ROWS < G::BM) {
    // The A rows no copy writes: zeros for good (the consumers' wgmmas read them; their
    // accumulator rows are not stored), made visible to the async proxy before the barrier.
    constexpr int kWords = (G::BM - G::TILE_ROWS) * G::SWZ / 16;
    for (int i = thread_linear(); i < G::STAGES * G::KB * kWords; i += G::THREADS) {
      const int blk = i / kWords; // stage blk / KB's k block blk % KB
      view_as<Pack<u32, 4>>(ring + blk / G::KB * G::STAGE_BYTES + blk % G::KB * G::A_BLOCK +
                            G::TILE_ROWS * G::SWZ)[i % kWords] = Pack<u32, 4>{};
    }
    fence_proxy_async();
  }
  if (thread_linear() == 0) {
    for (int s = 0; s < G::STAGES; ++s) {
      mbarrier_init(full + s, 1);
      mbarrier_init(empty + s, 4 * G::STAGE_READERS * (G::CM + G::CN - 1));
      if constexpr (G::ROUND_TF32) mbarrier_init(empty + G::STAGES + s, 128 * G::CONSUMERS);
    }
    if constexpr (G::PINGPONG) // the consumers' turns (consume): one arrival per warp
      for (int g = 0; g < 2; ++g)
        mbarrier_init(full + G::BARRIERS * G::STAGES + g, 4);
    fence_barrier_init();
  }
  if constexpr (G::CL > 1)
    cluster_sync(); // the peers' barriers initialised before this block arrives on them
  else
    sync_threads();
  // Alone (CL 1), cluster tiles are tiles and rank is 0.
  const int rank = G::CL > 1 ? int(cluster_ctarank()) : 0;
  const int first = int(blockIdx.x) / G::CL, step = int(gridDim.x) / G::CL;
  if (wg == 0) { // producer: few registers
    setmaxnreg_dec<40>();
    if (warp_id() == 0 && elect_one()) {
      int ring_it = 0;
      for (int t = first; t < G::UNITS; t += step) {
        const Unit u = unit_at<Cfg>(t);
        produce<Cfg>(args, ring, full, empty, tile_at<Cfg>(cluster_tile<Cfg>(u.tile, rank)), rank,
                     u.it0, u.it1, ring_it);
      }
    }
  } else {
    setmaxnreg_inc<232>(); // 128 x 40 + 256 x 232 <= 64K registers: one block per SM
    const int g = wg - 1;
    if constexpr (G::PINGPONG) {
      // The block's tiles alternate between the consumers; each skips the other's stages.
      const Shared<u64> turn = full + G::BARRIERS * G::STAGES; // consumer g's: turn + g
      WgmmaAcc<G::BN> lo, hi;
      int ring_it = 0, j = 0;
      for (int t = first; t < G::CLUSTER_TILES; t += step, ++j) {
        if (j % 2 != g) {
          ring_it += G::ITERS;
          continue;
        }
        if (j > 0) mbarrier_wait(turn + g, u32(((j - 1) / 2) & 1)); // this consumer's (j+1)/2-th
        const Tile tl = tile_at<Cfg>(t);
        prefetch_epilogue<Cfg>(args, 0, tl, staging, g); // rows 0-63's first slice
        consume<Cfg>(lo, &hi, ring, full, empty, 0, 0, turn + (1 - g), 0, G::ITERS, ring_it);
        // Rows 0-63, fetching rows 64-127's first slice at its end (store_staged).
        const int next = store<Cfg>(args, lo, 0, tl, staging, g, true, 0, 1);
        store<Cfg>(args, hi, 1, tl, staging, g, true, next);
      }
    } else {
      WgmmaAcc<G::BN> acc;
      int ring_it = 0;
      for (int t = first; t < G::UNITS; t += step) {
        const Unit u = unit_at<Cfg>(t);
        const Tile tl = tile_at<Cfg>(cluster_tile<Cfg>(u.tile, rank));
        // (A split unit's epilogue runs for its tile's last unit alone: nothing to fetch ahead.)
        if constexpr (G::SPLIT == 1) prefetch_epilogue<Cfg>(args, g, tl, staging, g);
        consume<Cfg>(acc, nullptr, ring, full, empty, g, rank, full /* no turns */, u.it0, u.it1,
                     ring_it);
        if constexpr (G::SPLIT > 1)
          if (!split_reduce<Cfg>(args, acc, g, tl, u)) continue; // another warp completes the rows
        store<Cfg>(args, acc, g, tl, staging, g, G::SPLIT == 1);
        // Every unit has drawn its ticket for these rows: zero for the next launch.
        if constexpr (G::SPLIT > 1)
          if (lane_id() == 0) arg<int>(args, G::kArgTickets)[counter_of<Cfg>(u.tile, g)] = 0;
      }
    }
  }
  if constexpr (G::CL > 1) cluster_sync(); // no block leaves while its peer may reach it
}

} // namespace kiln::hopper_conv
