// The Hopper implicit-GEMM conv's geometry (conv/hopper/igemm_wgmma.cuh describes the kernel
// and its Cfg): the GEMM and its tiles, the shared-memory layout, which output tile a block
// computes.
#pragma once

#include "common/epilogue.cuh"
#include "common/kiln.cuh"

namespace kiln::hopper_conv {

// FLAT: the GEMM over x's rows (above). Absent: false.
template <class Cfg, class = void> struct flat_of { static constexpr bool value = false; };
template <class Cfg> struct flat_of<Cfg, decltype(void(Cfg::FLAT))> {
  static constexpr bool value = Cfg::FLAT;
};

// ROW_TILES: a strided 1x1 unpadded conv whose output rows, across images, are one sequence
// (x's rows SH apart, H = SH * OH, so image n's row oh is row n * OH + oh of one strided view):
// a tile is TP whole output rows (TQ = OW), TP * OW <= BM of its GEMM rows used, read as one
// box of a 3-D map [N * OH][ceil(W / SW)][C]. A 7x7 map's 64-row tile holds 9 rows (63
// pixels) where an 8x8 pixel tile holds 49. Absent: false.
template <class Cfg, class = void> struct row_tiles_of { static constexpr bool value = false; };
template <class Cfg> struct row_tiles_of<Cfg, decltype(void(Cfg::ROW_TILES))> {
  static constexpr bool value = Cfg::ROW_TILES;
};

// IM2COL: a tile is BM consecutive GEMM rows (output pixels of all rows and images, as FLAT's),
// a filter tap's A one im2col-mode TMA copy of those BM pixels (a 4-D map C, W, H, N whose
// bounding box is the taps' first positions, traversed with the conv's strides; the tap is
// the copy's offset: runtime/emu/tensor_map.h). No pixel tile rounds the output up: a 3x3 over
// 14x14 computes 196 rows an image where 8x16 tiles compute 256. TP = 1, TQ = BM. Absent:
// false.
template <class Cfg, class = void> struct im2col_of { static constexpr bool value = false; };
template <class Cfg> struct im2col_of<Cfg, decltype(void(Cfg::IM2COL))> {
  static constexpr bool value = Cfg::IM2COL;
};

// SWIZZLE (bytes: 128, 64 or 32): the width of the operands' rows in shared memory, each one
// row of a swizzle atom; a k iteration brings that many bytes of channels. Absent: 128.
template <class Cfg, class = void> struct swizzle_of { static constexpr int value = 128; };
template <class Cfg> struct swizzle_of<Cfg, decltype(void(Cfg::SWIZZLE))> {
  static constexpr int value = Cfg::SWIZZLE;
};

// KBLOCKS (alone, no rounding pass; absent: 1): the k iterations (swizzle rows of channels) a
// stage brings, each its own A and B boxes side by side (A's KBLOCKS blocks of BM rows, then
// B's of BN): a 32-byte row's stage of 4 carries the k of a 128-byte row's, with a quarter of
// the stages, barrier waits and releases per tile (the per-stage time the H100's tiles show:
// bench/results/h100_2026-11-27c/epilogue_fit.txt).
template <class Cfg, class = void> struct kblocks_of { static constexpr int value = 1; };
template <class Cfg> struct kblocks_of<Cfg, decltype(void(Cfg::KBLOCKS))> {
  static constexpr int value = Cfg::KBLOCKS;
};

// CLUSTER_M, CLUSTER_N (1 or 2 each; absent: 1): a thread-block cluster of CLUSTER_M x
// CLUSTER_N blocks computing that many pixel tiles x channel blocks; the blocks of one channel
// block share its weight tile, each bringing 1 / CLUSTER_M of its rows by a multicast TMA into
// all of them, and the blocks of one pixel tile share its A likewise (1 / CLUSTER_N of its
// rows each): the L2 traffic of each operand drops by that factor.
template <class Cfg, class = void> struct cluster_m_of { static constexpr int value = 1; };
template <class Cfg> struct cluster_m_of<Cfg, decltype(void(Cfg::CLUSTER_M))> {
  static constexpr int value = Cfg::CLUSTER_M;
};
template <class Cfg, class = void> struct cluster_n_of { static constexpr int value = 1; };
template <class Cfg> struct cluster_n_of<Cfg, decltype(void(Cfg::CLUSTER_N))> {
  static constexpr int value = Cfg::CLUSTER_N;
};

// PINGPONG (two consumers, alone, f16/bf16 or operands that arrive as tf32, BN 64 or 128):
// consumer warpgroup g computes every other tile of its block whole (its 128 rows as two
// accumulators of 64), the other its neighbours, so that one's epilogue runs while the other's
// wgmmas keep the tensor cores busy (CUTLASS's "ping-pong" schedule). The ring is one sequence
// of stages, the tiles' in turn: a stage is one consumer's. Absent: false (both consumers on
// one tile, 64 rows each: "cooperative").
template <class Cfg, class = void> struct pingpong_of { static constexpr bool value = false; };
template <class Cfg> struct pingpong_of<Cfg, decltype(void(Cfg::PINGPONG))> {
  static constexpr bool value = Cfg::PINGPONG;
};

// SPLIT (> 1; absent: 1): split-K completed in the kernel (split_reduce.cuh): a block's work
// units are (tile, range of k) pairs, SPLIT ranges a tile, the tile's last unit to finish adding
// the others' fp32 slices in a fixed order and applying the epilogue. For grids that one tile
// per SM would leave mostly idle (batch 1's late stages: 7x7 maps of 512 channels are 8 tiles
// of BN 64 for 132 SMs).
template <class Cfg, class = void> struct split_of { static constexpr int value = 1; };
template <class Cfg> struct split_of<Cfg, decltype(void(Cfg::SPLIT))> {
  static constexpr int value = Cfg::SPLIT;
};

template <class Cfg> struct Geometry {
  using T = typename Cfg::T;
  static constexpr int C = Cfg::C, O = Cfg::O, KH = Cfg::KH, KW = Cfg::KW;
  static constexpr int BN = Cfg::BN, STAGES = Cfg::STAGES;
  static constexpr int CONSUMERS = Cfg::CONSUMERS, BM = 64 * CONSUMERS;
  static constexpr bool FLAT = flat_of<Cfg>::value, ROW_TILES = row_tiles_of<Cfg>::value;
  static constexpr bool IM2COL = im2col_of<Cfg>::value;
  static constexpr bool ROWS_TILED = FLAT || IM2COL; // a tile is BM consecutive GEMM rows
  static constexpr int TP = Cfg::TP, TQ = Cfg::TQ;
  static constexpr int TILE_ROWS = TP * TQ; // GEMM rows a tile uses (BM but for ROW_TILES)
  static constexpr int IMAGE_ROWS = Cfg::N * Cfg::OH;     // ROW_TILES: output rows, all images
  static constexpr int ROWS = Cfg::N * Cfg::OH * Cfg::OW; // GEMM rows (M)
  static constexpr int THREADS = 128 * (1 + CONSUMERS);
  static constexpr int SWZ = swizzle_of<Cfg>::value;
  static constexpr int BKC = SWZ / int(sizeof(T)); // channels per k iteration: one swizzle row
  static constexpr int KSTEPS = SWZ / 32; // wgmma k steps per iteration (k16, tf32 k8: 32 B)
  static constexpr int CB = C / BKC;               // channel blocks per filter tap
  static constexpr int KB = kblocks_of<Cfg>::value;            // k iterations a stage
  static constexpr int K_ITERS = KH * KW * CB;                 // k iterations (swizzle rows of k)
  static constexpr int ITERS = K_ITERS / KB;                   // stages a tile
  static constexpr int A_BLOCK = BM * SWZ, B_BLOCK = BN * SWZ; // one k iteration's
  static constexpr int A_BYTES = KB * A_BLOCK, B_BYTES = KB * B_BLOCK;
  static constexpr int STAGE_BYTES = A_BYTES + B_BYTES; // multiples of 1024: atoms aligned
  // The bytes a stage's copies bring: ROW_TILES' box leaves A's last BM - TILE_ROWS rows
  // alone (zeros, written once: conv_fwd).
  static constexpr int STAGE_TX = KB * TILE_ROWS * SWZ + B_BYTES;
  // f32 operands: wgmma reads them as tf32 by dropping 13 mantissa bits (towards zero), a
  // bias of about 2^-11 of each operand that adds up layer by layer (vgg16's seven such layers
  // gave 6.5e-3 on the H200, each within 7e-4). The consumers round each landed stage in
  // shared memory first (cvt.rna, as mma.sync's tf32 kernels do): each its own A rows and a
  // share of B, then all meet at a third barrier per stage before their wgmmas.
  // A_TF32 / B_TF32: an operand that arrives rounded (its producer's epilogue, the prepare
  // phase) is not rounded again; with both, there is no pass and no third barrier.
  static constexpr bool ROUND_TF32 =
      sizeof(T) == 4 && !(a_tf32_of<Cfg>::value && b_tf32_of<Cfg>::value);
  static constexpr int BARRIERS = ROUND_TF32 ? 3 : 2; // per stage: full, empty(, rounded)
  // y's pixels YP elements apart (Y_PITCH); VECTOR_Y: every 8-channel group of y, the
  // residual and the bias 16-byte aligned, for the epilogue's 16-byte accesses (epilogue.cuh).
  static constexpr int YP = int(y_pitch_of<Cfg, O>::value);
  static constexpr bool VECTOR_Y = O % 8 == 0 && YP % 8 == 0;
  // VECTOR_Y: the epilogue stages y through shared memory, each warp 16 rows x 128 bytes of
  // channels a slice; with a bias or residual, two buffers that also hold the slice's residual
  // rows and bias, brought by cp.async a slice ahead (epilogue.cuh).
  static constexpr bool STAGED_LOADS = epilogue_of<Cfg>::has_bias || epilogue_of<Cfg>::has_residual;
  static constexpr int STAGING_BUFFER = 16 * 128 + (STAGED_LOADS ? 128 : 0);
  static constexpr int STAGING_PER_WARP = (STAGED_LOADS ? 2 : 1) * STAGING_BUFFER;
  static constexpr int STAGING = VECTOR_Y ? 4 * CONSUMERS * STAGING_PER_WARP : 0;
  static constexpr int TILES_P = ceil_div(Cfg::OH, TP), TILES_Q = ceil_div(Cfg::OW, TQ);
  static constexpr int O_BLOCKS = ceil_div(O, BN);
  static constexpr int M_TILES = ROWS_TILED  ? ceil_div(ROWS, BM)
                                 : ROW_TILES ? ceil_div(IMAGE_ROWS, TP)
                                             : Cfg::N * TILES_P * TILES_Q;
  static constexpr int TILES = M_TILES * O_BLOCKS; // output tiles
  // Clusters: block rank r sits at (i, j) = (r % CM, r / CM) and computes pixel tile CM * u_m
  // + i of channel block CN * u_n + j for each cluster tile (u_m, u_n) (cluster_tile); it
  // multicasts B_SLICE weight rows (slice i) to the blocks of its column j, and A_SLICE rows
  // of its pixel tile (slice j: TP / CN pixel rows, or BM / CN GEMM rows) to those of its row.
  static constexpr int CM = cluster_m_of<Cfg>::value, CN = cluster_n_of<Cfg>::value;
  static constexpr int CL = CM * CN;
  static constexpr int CLUSTER_TILES = TILES / CL;
  static constexpr bool PINGPONG = pingpong_of<Cfg>::value;
  // The consumer warpgroups that read (and release) one stage: PINGPONG's one, else all.
  static constexpr int STAGE_READERS = PINGPONG ? 1 : CONSUMERS;
  static constexpr int B_SLICE = BN / CM, B_SLICE_BYTES = B_SLICE * SWZ;
  static constexpr int A_SLICE = BM / CN, A_SLICE_BYTES = A_SLICE * SWZ;
  static constexpr int TP_SLICE = TP / CN; // a slice of a pixel tile: whole rows of it
  static_assert((CM == 1 || CM == 2) && (CN == 1 || CN == 2), "CLUSTER_M, CLUSTER_N: 1 or 2");
  static_assert(M_TILES % CM == 0 && O_BLOCKS % CN == 0, "clusters: the tiles pair up");
  static_assert(B_SLICE % 8 == 0 && A_SLICE % 8 == 0, "clusters: whole swizzle atoms a slice");
  static_assert(FLAT || TP % CN == 0, "CLUSTER_N: a pixel tile's rows split evenly");
  static_assert(!IM2COL || (!FLAT && !ROW_TILES && TP == 1 && TQ == BM && CN == 1),
                "IM2COL: tiles of BM GEMM rows (TP 1, TQ = BM), A not split over a cluster");
  // Work units (unit_at): cluster tile u % CLUSTER_TILES's range u / CLUSTER_TILES of k, one
  // range (all of k) without SPLIT.
  static constexpr int SPLIT = split_of<Cfg>::value, UNITS = CLUSTER_TILES * SPLIT;
  static_assert(SPLIT == 1 || (SPLIT <= ITERS && CL == 1 && !PINGPONG),
                "SPLIT: at most one range per stage of k, alone, the consumers on one tile");
  static constexpr int SH = Cfg::SH, SW = Cfg::SW, MAPS = ROW_TILES || IM2COL ? 1 : SH * SW;
  static constexpr int kArgWMap = MAPS, kArgY = MAPS + 3;
  static constexpr int kArgBias = MAPS + 4, kArgRes = kArgBias + (Cfg::HAS_BIAS ? 1 : 0);
  // SPLIT > 1: the slices (float [SPLIT][ROWS][O]) and the counters (int, 4 * CONSUMERS a
  // tile: one per consumer warp's rows).
  static constexpr int kArgPartial = kArgRes + (Cfg::HAS_RESIDUAL ? 1 : 0);
  static constexpr int kArgTickets = kArgPartial + 1;
  static_assert(sizeof(T) == 2 || sizeof(T) == 4, "f16, bf16 or float (tf32)");
  static_assert(SWZ == 128 || SWZ == 64 || SWZ == 32, "SWIZZLE: 128, 64 or 32 bytes");
  static_assert(C % BKC == 0, "C a multiple of BKC: one swizzle row per channel block");
  static_assert(ROW_TILES ? TQ == Cfg::OW && TILE_ROWS <= BM && TILE_ROWS + TQ > BM
                          : TILE_ROWS == BM,
                "the pixel tile is 64 rows per consumer warpgroup (ROW_TILES: as many whole "
                "output rows as fit)");
  static_assert(!ROW_TILES || (!FLAT && KH == 1 && KW == 1 && Cfg::PH == 0 && Cfg::PW == 0 &&
                               Cfg::H == SH * Cfg::OH && CN == 1),
                "ROW_TILES: a 1x1 unpadded conv, H = SH * OH (the images' rows one strided "
                "sequence), A not split over a cluster");
  static_assert(!FLAT || (KH == 1 && KW == 1 && Cfg::SH == 1 && Cfg::SW == 1 && Cfg::PH == 0 &&
                          Cfg::PW == 0 && TP == 1),
                "FLAT: a 1x1, stride-1, unpadded conv (x's rows are the GEMM's), TP = 1");
  static_assert(BN == 64 || BN == 128 || BN == 256, "BN: 64, 128 or 256");
  static_assert(KB >= 1 && K_ITERS % KB == 0 && (KB == 1 || (CL == 1 && !ROUND_TF32)),
                "KBLOCKS: divides the k iterations; alone, no rounding pass");
  static_assert(!PINGPONG || (CONSUMERS == 2 && CL == 1 && !ROUND_TF32 && BN <= 128),
                "PINGPONG: two consumers, alone, no rounding pass, two 64 x BN accumulators "
                "(BN <= 128) a consumer");
  static_assert(CONSUMERS == 1 || CONSUMERS == 2, "one or two consumer warpgroups");
  static_assert(STAGES >= 2 && STAGES * STAGE_BYTES + STAGING + 1024 <= 227 * 1024,
                "shared memory");
  static_assert(SH >= 1 && SW >= 1 && Cfg::OH == (Cfg::H + 2 * Cfg::PH - KH) / SH + 1 &&
                    Cfg::OW == (Cfg::W + 2 * Cfg::PW - KW) / SW + 1,
                "output size of a dilation-1 convolution");
};

// Dynamic shared memory a launch needs: the ring (1024-byte aligned), the epilogue's staging
// and the barriers (PINGPONG: and the consumers' two turns), in that order.
template <class Cfg> KILN_CONST int smem_bytes() {
  using G = Geometry<Cfg>;
  return 1024 + G::STAGES * G::STAGE_BYTES + G::STAGING + 8 * G::BARRIERS * G::STAGES +
         (G::PINGPONG ? 16 : 0);
}

// Work unit u (of UNITS): cluster tile u % CLUSTER_TILES (alone, as with SPLIT: the tile),
// its stages [it0, it1) of ITERS, range `split` of SPLIT (the same number of stages, or one
// more, each; all of them without SPLIT).
struct Unit {
  int tile, split, it0, it1;
};
template <class Cfg> KILN_FN Unit unit_at(int u) {
  using G = Geometry<Cfg>;
  const int tile = u % G::CLUSTER_TILES, split = u / G::CLUSTER_TILES;
  return Unit{tile, split, G::ITERS * split / G::SPLIT, G::ITERS * (split + 1) / G::SPLIT};
}

// The output tile block `rank` of its cluster computes for cluster tile `ct` (of
// CLUSTER_TILES, its channel-block group fastest): pixel tile CM * (ct / (O_BLOCKS / CN)) + i
// of channel block CN * (ct % (O_BLOCKS / CN)) + j, (i, j) = (rank % CM, rank / CM).
template <class Cfg> KILN_FN int cluster_tile(int ct, int rank) {
  using G = Geometry<Cfg>;
  constexpr int groups = G::O_BLOCKS / G::CN;
  const int mt = ct / groups * G::CM + rank % G::CM, ob = ct % groups * G::CN + rank / G::CM;
  return mt * G::O_BLOCKS + ob;
}

// Multicast masks: the blocks of rank's column (sharing its channel block: B) and of its row
// (sharing its pixel tile: A).
template <class Cfg> KILN_FN u16 column_mask(int rank) {
  using G = Geometry<Cfg>;
  return u16(((1u << G::CM) - 1) << (rank / G::CM * G::CM));
}
template <class Cfg> KILN_FN u16 row_mask(int rank) {
  using G = Geometry<Cfg>;
  u32 m = 0;
  for (int j = 0; j < G::CN; ++j)
    m |= 1u << (rank % G::CM + G::CM * j);
  return u16(m);
}

// What filter tap (r, t) reads of x (conv/hopper/igemm_wgmma.cuh): with strides SH, SW and
// padding PH, PW its rows and columns all have one parity (ph, pw), so it reads the map of that
// parity (argument ph * SW + pw of the MAPS first) at offsets (cr, ct) in that map's units.
struct TapMap {
  const TensorMap* map;
  int cr, ct;
};
template <int SH, int SW, int PH, int PW, int MAPS>
KILN_FN TapMap tap_map(const KernelArgs& args, int r, int t) {
  const int dr = r - PH, dt = t - PW;
  const int ph = (dr % SH + SH) % SH, pw = (dt % SW + SW) % SW;
  // The map chosen by comparisons over constant indices: a parameter indexed at run time
  // would copy the kernel's argument array to local memory (16 STL in a tf32 stride-2 3x3
  // whose tap loop ptxas did not unroll).
  const int which = ph * SW + pw;
  const TensorMap* map = tensor_map_arg(args, 0);
#pragma unroll
  for (int m = 1; m < MAPS; ++m)
    if (m == which) map = tensor_map_arg(args, m);
  return TapMap{map, (dr - ph) / SH, (dt - pw) / SW};
}

// Output tile `tile` of TILES: channel block fastest, then pixel tiles, then images (FLAT,
// IM2COL: then blocks of BM rows; ROW_TILES: of TP output rows; m0 is the tile's first GEMM row
// either way).
struct Tile {
  int n, p0, q0, o0, m0;
};
template <class Cfg> KILN_FN Tile tile_at(int tile) {
  using G = Geometry<Cfg>;
  const int ob = tile % G::O_BLOCKS, mt = tile / G::O_BLOCKS;
  if constexpr (G::ROWS_TILED) return Tile{0, 0, 0, ob * G::BN, mt * G::BM};
  if constexpr (G::ROW_TILES) // p0: the tile's first output row of all images' rows
    return Tile{0, mt * G::TP, 0, ob * G::BN, mt * G::TILE_ROWS};
  const int pt = mt % (G::TILES_P * G::TILES_Q), n = mt / (G::TILES_P * G::TILES_Q);
  const int p0 = pt / G::TILES_Q * G::TP, q0 = pt % G::TILES_Q * G::TQ;
  return Tile{n, p0, q0, ob * G::BN, (n * Cfg::OH + p0) * Cfg::OW + q0};
}

} // namespace kiln::hopper_conv
