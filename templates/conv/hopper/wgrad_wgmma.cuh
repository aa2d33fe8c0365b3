// Weight gradient of a convolution for Hopper (sm_90a): the forward kernel's machinery
// (igemm_wgmma.cuh: TMA loads into an mbarrier ring, a producer warpgroup, CONSUMERS wgmma
// warpgroups) on a GEMM whose reduction runs over output positions:
//   dw[o][c][tap] = sum over positions r of dy[r][o] * x[r shifted by tap][c],
// M = O (BM = 64 * CONSUMERS channels of dy a block, 64 a consumer), N = C (BN channels of x,
// within one filter tap), K = the N * OH * OW positions, 64 a stage. A stage is one box of 64
// positions of each operand with its channels contiguous: rows of 128 bytes (64 f16 / bf16
// channels), 128-byte swizzled. For the tensor cores both operands are therefore MN-major
// (wgmma_mn: imm-trans 1, which the PTX ISA allows for 16-bit types only): a swizzle atom is
// 64 channels by 8 positions (1024 bytes), the next 8 positions SBO = 1024 bytes on, the next
// 64 channels (a further box) LBO = 64 x 128 bytes on; a k16 step is 2048 bytes.
//  - A (dy, NHWC): a 4-D tiled TMA of dy as [N][OH][OW][O], box 64 channels x TQ x TP x 1:
//    the TP x TQ output pixels of a tile (TP * TQ = 64; out of the map: zero fill).
//  - B (x, NHWC): SH * SW parity maps as the forward kernel's, box 64 channels x TQ x TP x 1,
//    read for tap (r, t) at (c, q0 + floor((t - PW) / SW), p0 + floor((r - PH) / SH), n) in the
//    map of parity ((r - PH) mod SH, (t - PW) mod SW): the padding is the copy's zero fill.
//  - FLAT (optional): a 1x1 stride-1 unpadded conv: dy as [N*OH*OW][O] and x as [N*H*W][C],
//    2-D maps, a tile being 64 consecutive positions.
// SLICES blocks share a dw tile, slice s taking the positions [s * R / SLICES, (s + 1) * R /
// SLICES) (R = N * OH * OW, positions in NHW order: conv2d.backward_weight's `partial`) and
// writing its fp32 slice of `partial` ([SLICES][O][C][KH][KW]; partial.sum adds them in slice
// order), or with one slice dw (OIHW, as T). A slice's tiles are the flat tiles from its first
// position, or the pixel tiles of every band of TP output rows it reaches; a tile that reaches
// outside the slice has those positions' dy rows zeroed in shared memory by its consumer
// (ordinary stores, the async-proxy fence, a warpgroup barrier) before its wgmmas. Every sum
// has a fixed order: results are deterministic.
//
// Cfg: T (f16, bf16); N, C, H, W, O, KH, KW, SH, SW, PH, PW, OH, OW; TP, TQ; FLAT (optional;
// TP 1, TQ 64); BN (64, 128 or 256; C a multiple); CONSUMERS (1 or 2; O a multiple of 64 *
// CONSUMERS); STAGES; SLICES; PARTIAL.
// Kernel arguments (M = SH * SW; FLAT: 1): 0..M-1 x's tensor maps, M dy's, then x, dy (what
// the maps read), out (partial or dw).
// Grid: (C / BN * KH * KW, O / (64 * CONSUMERS), SLICES); 128 * (1 + CONSUMERS) threads;
// wgrad_smem_bytes<Cfg>() dynamic.
#pragma once

#include "common/kiln.cuh"
#include "conv/hopper/geometry.cuh"

namespace kiln::hopper_wgrad {

template <class Cfg> struct WgradGeometry {
  using T = typename Cfg::T;
  static constexpr int C = Cfg::C, O = Cfg::O, KH = Cfg::KH, KW = Cfg::KW, KK = KH * KW;
  static constexpr int BN = Cfg::BN, STAGES = Cfg::STAGES, CONSUMERS = Cfg::CONSUMERS;
  static constexpr int BM = 64 * CONSUMERS, BK = 64; // positions a stage
  static constexpr int TP = Cfg::TP, TQ = Cfg::TQ;
  static constexpr bool FLAT = hopper_conv::flat_of<Cfg>::value;
  static constexpr int ROW = 128;        // bytes: 64 channels of one position
  static constexpr int BOX = BK * ROW;   // one box: 64 positions x 64 channels
  static constexpr int KSTEPS = BK / 16; // wgmma k16 steps a stage
  static constexpr int A_BYTES = CONSUMERS * BOX, B_BYTES = BN / 64 * BOX;
  static constexpr int STAGE_BYTES = A_BYTES + B_BYTES; // multiples of 1024: atoms aligned
  static constexpr int POSITIONS = Cfg::N * Cfg::OH * Cfg::OW;
  static constexpr int TILES_P = ceil_div(Cfg::OH, TP), TILES_Q = ceil_div(Cfg::OW, TQ);
  static constexpr int SH = Cfg::SH, SW = Cfg::SW, MAPS = FLAT ? 1 : SH * SW;
  static constexpr int kArgDyMap = MAPS, kArgOut = MAPS + 3;
  static_assert(sizeof(T) == 2, "f16 or bf16: the PTX ISA transposes 16-bit operands only");
  static_assert(C % BN == 0 && C % 64 == 0 && O % BM == 0, "whole 64-channel boxes, whole tiles");
  static_assert(BN == 64 || BN == 128 || BN == 256, "BN: 64, 128 or 256");
  static_assert(CONSUMERS == 1 || CONSUMERS == 2, "one or two consumer warpgroups");
  static_assert(TP * TQ == BK, "a tile is 64 positions");
  static_assert(POSITIONS >= Cfg::SLICES, "every slice has a position");
  static_assert(!FLAT || (KK == 1 && SH == 1 && SW == 1 && Cfg::PH == 0 && Cfg::PW == 0 &&
                          TP == 1 && Cfg::H == Cfg::OH && Cfg::W == Cfg::OW),
                "FLAT: a 1x1, stride-1, unpadded conv");
  static_assert(STAGES >= 2 && STAGES * STAGE_BYTES + 1024 + 16 * STAGES + 16 <= 227 * 1024,
                "shared memory");
  static_assert(Cfg::OH == (Cfg::H + 2 * Cfg::PH - KH) / SH + 1 &&
                    Cfg::OW == (Cfg::W + 2 * Cfg::PW - KW) / SW + 1,
                "output size of a dilation-1 convolution");
};

// The ring (1024-byte aligned), then per stage its full and empty barriers, then one mask
// barrier per consumer warpgroup.
template <class Cfg> KILN_CONST int wgrad_smem_bytes() {
  using G = WgradGeometry<Cfg>;
  return 1024 + G::STAGES * G::STAGE_BYTES + 16 * G::STAGES + 8 * G::CONSUMERS;
}

// A slice's positions [begin, end) and its tiles: `count` of them from `first` (flat: the
// position of its first tile; pixel tiles: its first band of TP output rows, n * TILES_P +
// p / TP, each band TILES_Q tiles).
struct Slice {
  int begin, end, first, count;
};
template <class Cfg> KILN_FN Slice slice_of(int s) {
  using G = WgradGeometry<Cfg>;
  const int b = int(i64(s) * G::POSITIONS / Cfg::SLICES);
  const int e = int((i64(s) + 1) * G::POSITIONS / Cfg::SLICES);
  if constexpr (G::FLAT) return Slice{b, e, b, ceil_div(e - b, G::BK)};
  const auto band = [](int pos) {
    return pos / (Cfg::OH * Cfg::OW) * G::TILES_P + pos / Cfg::OW % Cfg::OH / G::TP;
  };
  const int first = band(b);
  return Slice{b, e, first, (band(e - 1) - first + 1) * G::TILES_Q};
}

// Tile i of slice sl: its image and first pixel (flat: n = 0, p0 = 0, q0 = the position).
struct PosTile {
  int n, p0, q0;
};
template <class Cfg> KILN_FN PosTile tile_of(const Slice& sl, int i) {
  using G = WgradGeometry<Cfg>;
  if constexpr (G::FLAT) return PosTile{0, 0, sl.first + i * G::BK};
  const int band = sl.first + i / G::TILES_Q;
  return PosTile{band / G::TILES_P, band % G::TILES_P * G::TP, i % G::TILES_Q * G::TQ};
}

// The position of tile row r (flat: the tile's r-th; else pixel (p0 + r / TQ, q0 + r % TQ)),
// or -1 outside the image (rows the copy filled with zeros).
template <class Cfg> KILN_FN int row_position(const PosTile& t, int r) {
  using G = WgradGeometry<Cfg>;
  if constexpr (G::FLAT) return t.q0 + r < G::POSITIONS ? t.q0 + r : -1;
  const int p = t.p0 + r / G::TQ, q = t.q0 + r % G::TQ;
  return p < Cfg::OH && q < Cfg::OW ? (t.n * Cfg::OH + p) * Cfg::OW + q : -1;
}

// Whether some row of tile t lies outside the slice (its first and last rows bound them all).
template <class Cfg> KILN_FN bool reaches_out(const Slice& sl, const PosTile& t) {
  using G = WgradGeometry<Cfg>;
  if constexpr (G::FLAT) return t.q0 + G::BK > sl.end;
  const int lp = (t.p0 + G::TP < Cfg::OH ? t.p0 + G::TP : Cfg::OH) - 1;
  const int lq = (t.q0 + G::TQ < Cfg::OW ? t.q0 + G::TQ : Cfg::OW) - 1;
  return (t.n * Cfg::OH + t.p0) * Cfg::OW + t.q0 < sl.begin ||
         (t.n * Cfg::OH + lp) * Cfg::OW + lq >= sl.end;
}

// The producer: for each tile of the slice, wait for its stage to be free, announce the
// bytes, bring dy's CONSUMERS boxes and x's BN / 64 at filter tap `tap`.
template <class Cfg>
KILN_FN void produce(const KernelArgs& args, Shared<u8> ring, Shared<u64> full, Shared<u64> empty,
                     const Slice& sl, int tap, int c0, int o0) {
  using G = WgradGeometry<Cfg>;
  const TensorMap* dymap = tensor_map_arg(args, G::kArgDyMap);
  const auto [xmap, cr, ct] =
      hopper_conv::tap_map<G::SH, G::SW, Cfg::PH, Cfg::PW, G::MAPS>(args, tap / G::KW, tap % G::KW);
  for (int it = 0; it < sl.count; ++it) {
    const int s = it % G::STAGES;
    if (it >= G::STAGES) mbarrier_wait(empty + s, u32((it / G::STAGES - 1) & 1));
    mbarrier_arrive_expect_tx(full + s, u32(G::STAGE_BYTES));
    const Shared<u8> a = ring + s * G::STAGE_BYTES, b = a + G::A_BYTES;
    const PosTile tl = tile_of<Cfg>(sl, it);
    if constexpr (G::FLAT) { // positions past the end: the copies' zero fill
#pragma unroll
      for (int i = 0; i < G::CONSUMERS; ++i)
        tma_load(a + i * G::BOX, dymap, full + s, o0 + 64 * i, tl.q0);
#pragma unroll
      for (int j = 0; j < G::BN / 64; ++j)
        tma_load(b + j * G::BOX, xmap, full + s, c0 + 64 * j, tl.q0);
    } else {
#pragma unroll
      for (int i = 0; i < G::CONSUMERS; ++i)
        tma_load(a + i * G::BOX, dymap, full + s, o0 + 64 * i, tl.q0, tl.p0, tl.n);
#pragma unroll
      for (int j = 0; j < G::BN / 64; ++j)
        tma_load(b + j * G::BOX, xmap, full + s, c0 + 64 * j, tl.q0 + ct, tl.p0 + cr, tl.n);
    }
  }
}

// Zeroes the dy rows of tile t outside the slice in consumer g's box `a` (whole 128-byte rows:
// the swizzle permutes chunks within a row), fences them for the tensor cores and meets the
// warpgroup's other threads at `bar` (phase `parity`).
template <class Cfg>
KILN_FN void mask_rows(Shared<u8> a, const Slice& sl, const PosTile& t, Shared<u64> bar,
                       u32 parity) {
  using G = WgradGeometry<Cfg>;
  const Shared<Pack<u32, 4>> rows = view_as<Pack<u32, 4>>(a);
  for (int i = thread_linear() % 128; i < G::BK * 8; i += 128) {
    const int pos = row_position<Cfg>(t, i / 8);
    if (pos >= 0 && (pos < sl.begin || pos >= sl.end)) rows[i] = Pack<u32, 4>{};
  }
  fence_proxy_async();
  mbarrier_arrive(bar);
  mbarrier_wait(bar, parity);
}

// Consumer warpgroup g: its 64 channels of dy against the stage's BN of x, 4 k16 steps a
// stage; each stage released, one arrival a warp, once its wgmmas completed.
template <class Cfg>
KILN_FN void consume(WgmmaAcc<Cfg::BN>& acc, Shared<u8> ring, Shared<u64> full, Shared<u64> empty,
                     Shared<u64> mask, int g, const Slice& sl) {
  using G = WgradGeometry<Cfg>;
  using T = typename Cfg::T;
  u32 masked = 0; // phases of `mask` completed
  for (int it = 0; it < sl.count; ++it) {
    const int s = it % G::STAGES;
    mbarrier_wait(full + s, u32((it / G::STAGES) & 1));
    const Shared<u8> a = ring + s * G::STAGE_BYTES + g * G::BOX;
    const Shared<u8> b = ring + s * G::STAGE_BYTES + G::A_BYTES;
    if (Cfg::SLICES > 1) {
      const PosTile tl = tile_of<Cfg>(sl, it);
      if (reaches_out<Cfg>(sl, tl)) mask_rows<Cfg>(a, sl, tl, mask, (masked++) & 1);
    }
    wgmma_fence();
#pragma unroll
    for (int k = 0; k < G::KSTEPS; ++k)
      wgmma_mn(acc, wgmma_desc(a + k * 16 * G::ROW, 128, G::BOX, 8 * G::ROW),
               wgmma_desc(b + k * 16 * G::ROW, 128, G::BOX, 8 * G::ROW), it > 0 || k > 0, T{});
    wgmma_commit();
    // Writing fp32 slices, one group stays in flight while the next stage is awaited (as in
    // the forward kernel), the previous stage released once its wgmmas completed. Writing dw
    // as T, each stage's wgmmas complete before the next stage's wait: with one in flight,
    // ptxas serialised every wgmma of most of those kernels (C7514, the epilogue's
    // conversions seen reading the accumulators inside the pipeline; the NVRTC test refuses
    // it), and a second consumer warpgroup covers the drain instead.
    if constexpr (Cfg::PARTIAL) {
      wgmma_wait<1>();
      if (it > 0) mbarrier_arrive_warp(empty + (it - 1) % G::STAGES);
    } else {
      wgmma_wait<0>();
      mbarrier_arrive_warp(empty + s);
    }
  }
  if constexpr (Cfg::PARTIAL) {
    wgmma_wait<0>();
    mbarrier_arrive_warp(empty + (sl.count - 1) % G::STAGES);
  }
}

template <class Cfg> KILN_FN void wgrad(const KernelArgs& args) {
  using G = WgradGeometry<Cfg>;
  using T = typename Cfg::T;
  const Shared<u8> base = dynamic_shared<u8>(0);
  const int pad = int((1024 - smem_address(base) % 1024) % 1024); // swizzle atoms: 1024-aligned
  const Shared<u8> ring = base + pad;
  const Shared<u64> full = view_as<u64>(ring + G::STAGES * G::STAGE_BYTES);
  const Shared<u64> empty = full + G::STAGES, mask = empty + G::STAGES;
  const int cbs = G::C / G::BN;
  const int tap = int(blockIdx.x) / cbs, c0 = int(blockIdx.x) % cbs * G::BN;
  const int o0 = int(blockIdx.y) * G::BM, slice = int(blockIdx.z);
  const Slice sl = slice_of<Cfg>(slice); // at least one position: its first wgmma zeroes
  if (thread_linear() == 0) {
    for (int s = 0; s < G::STAGES; ++s) {
      mbarrier_init(full + s, 1);
      mbarrier_init(empty + s, 4 * G::CONSUMERS); // consumer warps (mbarrier_arrive_warp)
    }
    for (int g = 0; g < G::CONSUMERS; ++g)
      mbarrier_init(mask + g, 128);
    fence_barrier_init();
  }
  sync_threads();
  const int wg = thread_linear() / 128;
  if (wg == 0) { // producer: few registers
    setmaxnreg_dec<40>();
    if (warp_id() == 0 && elect_one()) produce<Cfg>(args, ring, full, empty, sl, tap, c0, o0);
    return;
  }
  setmaxnreg_inc<232>();
  const int g = wg - 1;
  WgmmaAcc<G::BN> acc;
  consume<Cfg>(acc, ring, full, empty, mask + g, g, sl);
  // The D fragment (hopper_cuda.cuh): register 4 j + 2 h + e of thread 32 w + lane holds row
  // 16 w + 8 h + lane / 4 (a channel o of dy), column 8 j + 2 (lane % 4) + e (a channel c of
  // x), stored at dw's (o, c, tap) (OIHW): from a base per h, offsets that are constants (an
  // address computed per value lets ptxas hoist the conversions above the wait and serialise
  // the wgmmas, C7514).
  const int lane = thread_linear() % 32, w = thread_linear() % 128 / 32;
  using Out = typename pick<Cfg::PARTIAL, float, T>::type;
  const Global<Out> out =
      arg<Out>(args, G::kArgOut) + (Cfg::PARTIAL ? i64(slice) * G::O * G::C * G::KK : 0);
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int o = o0 + 64 * g + 16 * w + 8 * h + lane / 4;
    const Global<Out> at = out + (i64(o) * G::C + c0 + 2 * (lane % 4)) * G::KK + tap;
#pragma unroll
    for (int j = 0; j < G::BN / 8; ++j)
#pragma unroll
      for (int e = 0; e < 2; ++e)
        at[(8 * j + e) * G::KK] = from_float<Out>(acc[4 * j + 2 * h + e]);
  }
}

} // namespace kiln::hopper_wgrad
