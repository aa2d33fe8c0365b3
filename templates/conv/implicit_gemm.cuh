// Implicit-GEMM convolution on tensor cores (conv2d.forward, NHWC, groups == 1).
//
// GEMM view: rows m = (n, oh, ow) of the output (M = N*OH*OW), columns o (O output channels),
// reduction k = (kh, kw, c) (K = KH*KW*C), so that A[m][k] = x[n][ih][iw][c] (NHWC, zero
// outside the image) and B[k][o] = w[o][kh][kw][c] (weights stored OHWI: row o of B^T is
// contiguous in k). y[m][o] = act(sum_k A[m][k] B[k][o] + b[o] + residual[m][o]), the fused
// epilogue of common/epilogue.cuh.
//
// Cfg:
//   T                      element type of every tensor: kiln::f16 / kiln::bf16 (mma m16n8k16,
//                          fp32 accumulate) or float (tf32 mma m16n8k8, operands rounded)
//   B_TF32                 (optional) float weights that arrive rounded to tf32 (rounded once
//                          in the prepare phase): only A's fragments are rounded
//   N, C, H, W             input x [N][H][W][C]
//   O, KH, KW              weights [O][KH][KW][C]
//   SH, SW, PH, PW, DH, DW stride, padding, dilation
//   HAS_BIAS, HAS_RESIDUAL, RELU or ACT   the fused epilogue
//   GUARD, THRESHOLD       the dense side of a sparse dispatch: return, writing nothing,
//                          unless the running nonzero count nnz of x exceeds THRESHOLD
//   BM, BN, BK             block tile (BK in elements; BK * sizeof(T) a multiple of 32 bytes)
//   WM, WN                 warps along M and N (THREADS = 32 * WM * WN); warp tile
//                          (BM / WM) x (BN / WN), a multiple of 16 x 8
//   STAGES                 shared-memory pipeline depth (>= 2; cp.async groups on sm_80+)
//   VEC_A, VEC_B           16-byte cp.async loads of A (needs C % (16 / sizeof(T)) == 0) and
//                          B (needs K % (16 / sizeof(T)) == 0); element loads otherwise
//   SWIZZLE, PAD           how shared rows avoid bank conflicts: SWIZZLE (PAD 0) XORs a row's
//                          16-byte chunks with its row within 8 (conv/igemm/geometry.cuh,
//                          chunk_at); else PAD 32-bit words of padding per row (4 keeps rows
//                          16-byte aligned and the fragment loads conflict-free)
//   LDMATRIX               fragments by ldmatrix.x4 (else one 32-bit shared load per register)
//   FRAG_BUFFERS           2: fragments double-buffered across k-steps (the next k-step's load
//                          in flight behind this one's mmas); 1: loaded right before their mmas
//   IDX64                  64-bit element offsets (tensors near 2^31 elements or more)
//   X_NCHW                 x is stored NCHW (element loads only, !VEC_A): a network's first
//                          conv reads its NCHW input, or a folded batch's view of it, into
//                          an NHWC network without a conversion
//   SPLIT                  split-K: > 1 splits the reduction into SPLIT ranges of k (their
//                          bounds kb(s) = 16 * floor(s * ceil(K / 16) / SPLIT), kb(SPLIT) = K,
//                          runtime/step_fn.hpp's split_k_begin), each block reducing one range
//                          of one tile into partial[s][m][o] (float, no epilogue); partial.sum
//                          completes y. More blocks when M x O is a few tiles and K is long.
//   SPLIT_REDUCE           (optional, with SPLIT > 1) the split completed in this kernel: the
//                          tile's last block adds the slices in order and applies the epilogue
//                          (conv/igemm/split_reduce.cuh; arguments end y, partial, tickets).
//   GATE                   (optional) a squeeze-excite gate fused into this conv: x is read as
//                          x[n][..][c] * gate[n][c] (gate [N][C], the last argument), each
//                          product rounded to T as the separate mul kernel rounds it; 16-byte
//                          chunks scaled where they land (conv/igemm/load_global.cuh)
//   X_PITCH                (optional, NHWC x) x is a channel window of a wider tensor, its
//                          pixels X_PITCH elements apart (a channel slice as a view)
//   Y_PITCH                (optional, not with a two-step SPLIT) y (POOL: the pooled y) is a
//                          channel window of a concat's output, its pixels Y_PITCH elements
//                          apart (generator/rewrite/channel_views.cpp); the residual is y's
//                          own shape still
//   POOL                   conv2d.pool_forward: a max pool fused after the epilogue. PKH, PKW,
//                          PSH, PSW, PPH, PPW (window, stride, padding), POH, POW (pooled
//                          extents), PTH x PTW pooled outputs per block: the block's BM rows
//                          are the FH x FW footprint of its pooled tile (FH = (PTH - 1) * PSH
//                          + PKH <= BM / FW, rows past it or outside the conv's output are
//                          -inf), M = N * pooled tiles * BM; the tile is staged in shared
//                          memory and pooled there, y is the pooled output (NHWC).
// Arguments, in order: x, w, [b] (HAS_BIAS), [residual] (HAS_RESIDUAL), [nnz] (GUARD), y; with
//   SPLIT > 1: x, w, partial; with SPLIT_REDUCE: x, w, [b], [residual], y, partial, tickets;
//   then [gate] (GATE).
// Grid: 1-D, ceil(M / BM) * ceil(O / BN) * SPLIT blocks; block i reduces range i / TILES of the
//   tile j = i % TILES, (j / NTN, j % NTN) with NTN = ceil(O / BN) (output-channel tiles
//   fastest: neighbours share their A rows).
// Block: THREADS threads. Dynamic shared memory: STAGES * (BM + BN) * (BK * sizeof(T) / 4 + PAD)
//   32-bit words, or POOL's staged tile of BM * (BN + 1) floats where that is more
//   (Geometry::SMEM_WORDS; more than 48 KiB needs the launch's opt-in).
//
// Shared memory holds 32-bit words: two 16-bit elements (consecutive k) or one float per
// word, the unit of the mma fragment registers; row r of a stage's A (or B) tile holds the
// BK k-values of GEMM row m0 + r (or column o0 + r), its 16-byte chunks swizzled (or the rows
// PAD words apart), so that the eight rows one fragment load touches fall in distinct banks.
// Pipeline: STAGES - 1 k tiles in flight (one cp.async group each) while one is multiplied
// (conv/igemm/mainloop.cuh says the order). Tuning knobs beyond the Cfg: the block raster
// (output-channel tiles fastest) and a shared-memory-staged epilogue for 16-byte stores.
//
// The parts: conv/igemm/geometry.cuh (constants, block and warp tiles), load_global.cuh
// (global -> shared), load_fragments.cuh (shared -> mma fragments, the mma), mainloop.cuh
// (the pipeline), epilogue.cuh (the stores), split_reduce.cuh (the in-kernel split-K).
#pragma once

#include "conv/igemm/epilogue.cuh"
#include "conv/igemm/mainloop.cuh"
#include "conv/igemm/split_reduce.cuh"

namespace kiln::conv {

template <class Cfg> KILN_FN void implicit_gemm(const KernelArgs& args) {
  using G = igemm::Geometry<Cfg>;
  if constexpr (Cfg::GUARD) {
    if ((long long)(arg<const int>(args, G::kArgNnz)[0]) <= (long long)(Cfg::THRESHOLD)) return;
  }
  const Shared<u32> smem = dynamic_shared<u32>();
  const igemm::BlockTile<Cfg> block;
  const igemm::GlobalLoader<Cfg> loader(args, smem, block);
  const igemm::WarpTile<Cfg> warp;
  const igemm::FragmentLoader<Cfg> fragments(loader.a_smem, loader.b_smem, warp);
  float acc[G::MT][G::NT][4];
  igemm::mainloop<Cfg>(loader, fragments, block.kt_first, block.KT, acc);
  if constexpr (igemm::split_reduce_of<Cfg>::value)
    igemm::split_reduce<Cfg>(args, block, warp, acc);
  else
    igemm::epilogue<Cfg>(args, block, warp, acc);
}

} // namespace kiln::conv
