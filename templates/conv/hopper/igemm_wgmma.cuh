// Implicit-GEMM convolution forward for Hopper (sm_90a): TMA loads into a multi-stage ring
// completed by mbarriers, one producer warpgroup (one elected thread issues the copies) and
// CONSUMERS warpgroups computing with wgmma from 128-byte-swizzled shared memory, then the
// fused epilogue (bias, residual, activation: common/epilogue.cuh) stored from registers.
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
//  - FLAT (optional): a 1x1 stride-1 unpadded conv, or a linear layer (x [N][C], H = W = 1),
//    is a plain GEMM over M = N * OH * OW rows of x: A is one 2-D tiled TMA of x as [M][C],
//    box BKC x BM rows, and a tile is BM consecutive rows, whatever the image or row they
//    fall in (a 7x7 map fills 128-row tiles where 8x8 pixel tiles leave 23% idle).
// Each k iteration is one (r, s, block of BKC = 128 bytes of channels: 64 f16/bf16, 32 f32):
// A is TP * TQ rows of 128 bytes (consumer
// g takes rows 64g..64g+63), B BN rows of 128 bytes, both in the layout the TMA's 128-byte
// swizzle writes and wgmma's 128-byte-swizzle descriptors read (SBO 1024; each of the 4 k
// steps, k16 for 16-bit types and k8 for tf32, is +32 bytes). f32 runs as tf32: the tensor
// cores read each operand's top 19 bits.
//
// Cfg: T (f16, bf16, or float for tf32); N, C, H, W, O, KH, KW, SH, SW, PH, PW, OH, OW; TP, TQ
// (TP * TQ = 64 * CONSUMERS); BN (64, 128 or 256); STAGES; CONSUMERS (1 or 2); HAS_BIAS,
// HAS_RESIDUAL, ACT / RELU; B_TF32 and A_TF32 (optional: float weights / activations that
// arrive rounded to tf32, so that only the other is rounded in shared memory, or neither);
// Y_TF32 (optional: the epilogue rounds y to tf32 for readers that are all tf32 convs);
// FLAT (optional, above; TP = 1 and TQ = BM, a tile being BM rows of the GEMM); Y_PITCH
// (optional: y a channel window of a concat's output, its pixels Y_PITCH elements apart).
// Kernel arguments (M = SH * SW): 0..M-1 x's tensor maps (map
// ph * SW + pw; FLAT: the one 2-D map), M w's tensor map, then x, w (what the maps read; named so
// the buffers stay arguments), y, and bias, residual when present.
#pragma once

#include "common/epilogue.cuh"
#include "common/kiln.cuh"
#include "common/words.cuh"

namespace kiln::hopper_conv {

// FLAT: the GEMM over x's rows (above). Absent: false.
template <class Cfg, class = void> struct flat_of { static constexpr bool value = false; };
template <class Cfg> struct flat_of<Cfg, decltype(void(Cfg::FLAT))> {
  static constexpr bool value = Cfg::FLAT;
};

template <class Cfg> struct Geometry {
  using T = typename Cfg::T;
  static constexpr int C = Cfg::C, O = Cfg::O, KH = Cfg::KH, KW = Cfg::KW;
  static constexpr int BN = Cfg::BN, STAGES = Cfg::STAGES;
  static constexpr int CONSUMERS = Cfg::CONSUMERS, BM = 64 * CONSUMERS;
  static constexpr bool FLAT = flat_of<Cfg>::value;
  static constexpr int TP = Cfg::TP, TQ = Cfg::TQ;
  static constexpr int ROWS = Cfg::N * Cfg::OH * Cfg::OW; // GEMM rows (M)
  static constexpr int THREADS = 128 * (1 + CONSUMERS);
  static constexpr int BKC = 128 / int(sizeof(T)); // channels per k iteration: one 128 B row
  static constexpr int CB = C / BKC;               // channel blocks per filter tap
  static constexpr int ITERS = KH * KW * CB; // k iterations
  static constexpr int A_BYTES = BM * 128, B_BYTES = BN * 128;
  static constexpr int STAGE_BYTES = A_BYTES + B_BYTES; // multiples of 1024: atoms aligned
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
  static constexpr int TILES_P = ceil_div(Cfg::OH, TP), TILES_Q = ceil_div(Cfg::OW, TQ);
  static constexpr int O_BLOCKS = ceil_div(O, BN);
  static constexpr int M_TILES = FLAT ? ceil_div(ROWS, BM) : Cfg::N * TILES_P * TILES_Q;
  static constexpr int TILES = M_TILES * O_BLOCKS; // output tiles
  static constexpr int SH = Cfg::SH, SW = Cfg::SW, MAPS = SH * SW;
  static constexpr int kArgWMap = MAPS, kArgY = MAPS + 3;
  static constexpr int kArgBias = MAPS + 4, kArgRes = kArgBias + (Cfg::HAS_BIAS ? 1 : 0);
  static_assert(sizeof(T) == 2 || sizeof(T) == 4, "f16, bf16 or float (tf32)");
  static_assert(C % BKC == 0, "C a multiple of BKC: one 128-byte swizzle row per channel block");
  static_assert(TP * TQ == BM, "the pixel tile is 64 rows per consumer warpgroup");
  static_assert(!FLAT || (KH == 1 && KW == 1 && Cfg::SH == 1 && Cfg::SW == 1 && Cfg::PH == 0 &&
                          Cfg::PW == 0 && TP == 1),
                "FLAT: a 1x1, stride-1, unpadded conv (x's rows are the GEMM's), TP = 1");
  static_assert(BN == 64 || BN == 128 || BN == 256, "BN: 64, 128 or 256");
  static_assert(CONSUMERS == 1 || CONSUMERS == 2, "one or two consumer warpgroups");
  static_assert(STAGES >= 2 && STAGES * STAGE_BYTES + 1024 <= 227 * 1024, "shared memory");
  static_assert(SH >= 1 && SW >= 1 && Cfg::OH == (Cfg::H + 2 * Cfg::PH - KH) / SH + 1 &&
                    Cfg::OW == (Cfg::W + 2 * Cfg::PW - KW) / SW + 1,
                "output size of a dilation-1 convolution");
};

// Dynamic shared memory a launch needs: the ring (1024-byte aligned) and the barriers.
template <class Cfg> KILN_CONST int smem_bytes() {
  using G = Geometry<Cfg>;
  return 1024 + G::STAGES * G::STAGE_BYTES + 8 * G::BARRIERS * G::STAGES;
}

// Output tile `tile` of TILES: channel block fastest, then pixel tiles, then images (FLAT:
// then blocks of BM rows; m0 is the tile's first GEMM row either way).
struct Tile {
  int n, p0, q0, o0, m0;
};
template <class Cfg> KILN_FN Tile tile_at(int tile) {
  using G = Geometry<Cfg>;
  const int ob = tile % G::O_BLOCKS, mt = tile / G::O_BLOCKS;
  if constexpr (G::FLAT) return Tile{0, 0, 0, ob * G::BN, mt * G::BM};
  const int pt = mt % (G::TILES_P * G::TILES_Q), n = mt / (G::TILES_P * G::TILES_Q);
  const int p0 = pt / G::TILES_Q * G::TP, q0 = pt % G::TILES_Q * G::TQ;
  return Tile{n, p0, q0, ob * G::BN, (n * Cfg::OH + p0) * Cfg::OW + q0};
}

// The producer, for one output tile: for each k iteration, wait for its stage to be free,
// announce the bytes, issue the two copies. `ring_it` counts the block's k iterations over
// all its tiles: the stage and the barriers' phases follow from it.
template <class Cfg>
KILN_FN void produce(const KernelArgs& args, Shared<u8> ring, Shared<u64> full, Shared<u64> empty,
                     const Tile& tl, int& ring_it) {
  using G = Geometry<Cfg>;
  const TensorMap* wmap = tensor_map_arg(args, G::kArgWMap);
  for (int k_it = 0; k_it < G::ITERS; ++k_it, ++ring_it) {
    const int it = ring_it, s = it % G::STAGES;
    if (it >= G::STAGES) mbarrier_wait(empty + s, u32((it / G::STAGES - 1) & 1));
    const int cb = k_it % G::CB, tap = k_it / G::CB, r = tap / G::KW, t = tap % G::KW;
    mbarrier_arrive_expect_tx(full + s, u32(G::STAGE_BYTES));
    const Shared<u8> a = ring + s * G::STAGE_BYTES, b = a + G::A_BYTES;
    // Tap (r, t) reads parity (ph, pw) of x at offsets (cr, ct) in that map's units.
    const int dr = r - Cfg::PH, dt = t - Cfg::PW;
    const int ph = (dr % G::SH + G::SH) % G::SH, pw = (dt % G::SW + G::SW) % G::SW;
    const int cr = (dr - ph) / G::SH, ct = (dt - pw) / G::SW;
    // The map chosen by comparisons over constant indices: a parameter indexed at run time
    // would copy the kernel's argument array to local memory (16 STL in a tf32 stride-2 3x3
    // whose tap loop ptxas did not unroll).
    const int which = ph * G::SW + pw;
    const TensorMap* xmap = tensor_map_arg(args, 0);
#pragma unroll
    for (int m = 1; m < G::MAPS; ++m)
      if (m == which) xmap = tensor_map_arg(args, m);
    if constexpr (G::FLAT) // rows past M: the copy's zero fill
      tma_load(a, xmap, full + s, cb * G::BKC, tl.m0);
    else
      tma_load(a, xmap, full + s, cb * G::BKC, tl.q0 + ct, tl.p0 + cr, tl.n);
    tma_load(b, wmap, full + s, tap * G::C + cb * G::BKC, tl.o0);
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
  const Shared<Pack<u32, 4>> a = view_as<Pack<u32, 4>>(stage + g * 64 * 128);
  const Shared<Pack<u32, 4>> b = view_as<Pack<u32, 4>>(stage + G::A_BYTES);
  if constexpr (!a_tf32_of<Cfg>::value) // A_TF32: x rounded by its producer's epilogue
    for (int i = t; i < 64 * 128 / 16; i += 128)
      round4(a, i);
  if constexpr (!b_tf32_of<Cfg>::value) // B_TF32: the weights arrive rounded (prepare phase)
    for (int i = g * 128 + t; i < G::B_BYTES / 16; i += 128 * G::CONSUMERS)
      round4(b, i);
  fence_proxy_async();
  mbarrier_arrive(rounded);
  mbarrier_wait(rounded, parity);
}

// A consumer warpgroup g, for one output tile: 64 pixel rows x BN channels in registers.
// Each stage is released once its wgmmas completed; the tile's last one before the epilogue,
// so the producer can fill it with the next tile's data meanwhile.
template <class Cfg>
KILN_FN void consume(WgmmaAcc<Cfg::BN>& acc, Shared<u8> ring, Shared<u64> full, Shared<u64> empty,
                     int g, int& ring_it) {
  const Shared<u64> rounded = empty + Cfg::STAGES; // tf32 only
  using G = Geometry<Cfg>;
  using T = typename Cfg::T;
  for (int k_it = 0; k_it < G::ITERS; ++k_it, ++ring_it) {
    const int it = ring_it, s = it % G::STAGES;
    mbarrier_wait(full + s, u32((it / G::STAGES) & 1));
    if constexpr (G::ROUND_TF32)
      round_stage<Cfg>(ring + s * G::STAGE_BYTES, rounded + s, g, thread_linear() % 128,
                       u32((it / G::STAGES) & 1));
    const Shared<u8> a = ring + s * G::STAGE_BYTES + g * 64 * 128;
    const Shared<u8> b = ring + s * G::STAGE_BYTES + G::A_BYTES;
    wgmma_fence();
#pragma unroll
    for (int k = 0; k < 4; ++k) // 128 bytes of channels = 4 k steps of 32 bytes
      wgmma(acc, wgmma_desc(a + 32 * k, 128, 16, 1024), wgmma_desc(b + 32 * k, 128, 16, 1024),
            k_it > 0 || k > 0, T{});
    wgmma_commit();
    // One group stays in flight (this stage's) while the next stage's copies are awaited;
    // the previous stage's wgmmas are then done reading it: release that one.
    wgmma_wait<1>();
    if (k_it > 0) mbarrier_arrive(empty + (it + G::STAGES - 1) % G::STAGES);
  }
  wgmma_wait<0>();
  mbarrier_arrive(empty + (ring_it + G::STAGES - 1) % G::STAGES);
}

// y = act(acc + bias + residual) for the consumer's rows (fragment layout: hopper_cuda.cuh).
// A thread holds two rows (m, m + 8) of BN / 8 channel pairs each (registers 4c + 2h and
// 4c + 2h + 1: pair c of row h). Each run of CHUNK pairs loads its bias and residual words
// before it stores any of y: the compiler may not move a load past a store to y (it could
// alias), and one load's latency exposed per pair cost 3-5x on the H100 (bench/results).
template <class Cfg>
KILN_FN void store(const KernelArgs& args, WgmmaAcc<Cfg::BN>& acc, int g, const Tile& tl) {
  using G = Geometry<Cfg>;
  using T = typename Cfg::T;
  using E = epilogue_of<Cfg>;
  using Pair = typename pick<sizeof(T) == 2, u32, u64>::type; // two elements as one word
  const auto y = arg<T>(args, G::kArgY);
  const int t = thread_linear() % 128, w = t / 32, lane = t % 32;
  constexpr int YP = y_pitch_of<Cfg, G::O>::value; // y's pixels YP elements apart (Y_PITCH)
  constexpr bool kPairs = G::O % 2 == 0;           // bias, residual pairs aligned words
  constexpr bool kYPairs = kPairs && YP % 2 == 0;
  constexpr int PAIRS = Cfg::BN / 8;
  constexpr int CHUNK = PAIRS < 32 / int(sizeof(Pair)) ? PAIRS : 32 / int(sizeof(Pair));
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int m = 64 * g + 16 * w + lane / 4 + 8 * h;
    i64 row; // y's NHWC row (GEMM row) of this pixel
    if constexpr (G::FLAT) {
      if (tl.m0 + m >= G::ROWS) continue;
      row = tl.m0 + m;
    } else {
      const int p = tl.p0 + m / G::TQ, q = tl.q0 + m % G::TQ;
      if (p >= Cfg::OH || q >= Cfg::OW) continue;
      row = (i64(tl.n) * Cfg::OH + p) * Cfg::OW + q;
    }
    // Pair c of this row is channel o(c) = oa + 8c: the addresses below are one register each
    // plus constant offsets (an index o / 2 per pair made the compiler keep a 64-bit address
    // per pair, and spill).
    const int oa = tl.o0 + 2 * (lane % 4);
    Global<const Pair> bias2{}, res2{}; // present where used (kPairs)
    Global<Pair> y2{};                  // kYPairs
    if constexpr (kPairs && E::has_bias) bias2 = arg<const Pair>(args, G::kArgBias) + oa / 2;
    if constexpr (kPairs && E::has_residual)
      res2 = arg<const Pair>(args, G::kArgRes) + (row * G::O + oa) / 2;
    if constexpr (kYPairs) y2 = view_as<Pair>(y) + (row * YP + oa) / 2;
#pragma unroll // constant register indices: the accumulators stay in registers
    for (int c0 = 0; c0 < PAIRS; c0 += CHUNK) {
      Pair bw[CHUNK], rw[CHUNK]; // bias and residual pairs, raw
#pragma unroll
      for (int j = 0; j < CHUNK; ++j) {
        const int c = c0 + j, o = oa + 8 * c;
        bw[j] = rw[j] = 0; // zero bits: 0.0 in every T
        if (o >= G::O) continue;
        if constexpr (kPairs) {
          if constexpr (E::has_bias) bw[j] = bias2[4 * c];
          if constexpr (E::has_residual) rw[j] = res2[4 * c];
        } else {
          const bool second = o + 1 < G::O;
          if constexpr (E::has_bias) {
            const Global<const T> bias = arg<const T>(args, G::kArgBias);
            bw[j] = pair(bias[o], second ? bias[o + 1] : T{});
          }
          if constexpr (E::has_residual) {
            const Global<const T> res = arg<const T>(args, G::kArgRes) + row * G::O;
            rw[j] = pair(res[o], second ? res[o + 1] : T{});
          }
        }
      }
#pragma unroll
      for (int j = 0; j < CHUNK; ++j) {
        const int c = c0 + j, o = oa + 8 * c, i = 4 * c + 2 * h;
        if (o >= G::O) continue;
        const T v0 =
            from_float<T>(E::apply(acc[i], to_float(lo<T>(bw[j])), to_float(lo<T>(rw[j]))));
        const T v1 =
            from_float<T>(E::apply(acc[i + 1], to_float(hi<T>(bw[j])), to_float(hi<T>(rw[j]))));
        if constexpr (kYPairs) {
          y2[4 * c] = pair(v0, v1);
        } else {
          const i64 yat = row * YP + o;
          y[yat] = v0;
          if (o + 1 < G::O) y[yat + 1] = v1;
        }
      }
    }
  }
}

// Grid: (blocks, 1, 1); block b computes tiles b, b + blocks, ... of TILES (persistent when
// blocks < TILES: the producer fills the next tile's stages during the epilogue);
// THREADS threads; smem_bytes<Cfg>() dynamic.
template <class Cfg> KILN_FN void conv_fwd(const KernelArgs& args) {
  using G = Geometry<Cfg>;
  const Shared<u8> base = dynamic_shared<u8>(0);
  const int pad = int((1024 - smem_address(base) % 1024) % 1024); // swizzle atoms: 1024-aligned
  const Shared<u8> ring = base + pad;
  const Shared<u64> full = view_as<u64>(ring + G::STAGES * G::STAGE_BYTES);
  const Shared<u64> empty = full + G::STAGES;
  const int wg = thread_linear() / 128;
  if (thread_linear() == 0) {
    for (int s = 0; s < G::STAGES; ++s) {
      mbarrier_init(full + s, 1);
      mbarrier_init(empty + s, 128 * G::CONSUMERS);
      if constexpr (G::ROUND_TF32) mbarrier_init(empty + G::STAGES + s, 128 * G::CONSUMERS);
    }
    fence_barrier_init();
  }
  sync_threads();
  if (wg == 0) { // producer: few registers
    setmaxnreg_dec<40>();
    if (warp_id() == 0 && elect_one()) {
      int ring_it = 0;
      for (int tile = int(blockIdx.x); tile < G::TILES; tile += int(gridDim.x)) {
        const Tile tl = tile_at<Cfg>(tile);
        produce<Cfg>(args, ring, full, empty, tl, ring_it);
      }
    }
  } else {
    setmaxnreg_inc<232>(); // 128 x 40 + 256 x 232 <= 64K registers: one block per SM
    WgmmaAcc<G::BN> acc;
    int ring_it = 0;
    for (int tile = int(blockIdx.x); tile < G::TILES; tile += int(gridDim.x)) {
      const Tile tl = tile_at<Cfg>(tile);
      consume<Cfg>(acc, ring, full, empty, wg - 1, ring_it);
      store<Cfg>(args, acc, wg - 1, tl);
    }
  }
}

} // namespace kiln::hopper_conv
