// The Hopper conv's fused epilogue, y = act(acc + bias + residual) for a consumer warpgroup's
// 64 rows x BN channels (fragment layout: hopper_cuda.cuh; arithmetic: common/epilogue.cuh).
#pragma once

#include "common/epilogue.cuh"
#include "common/kiln.cuh"
#include "common/words.cuh"
#include "conv/hopper/geometry.cuh"

namespace kiln::hopper_conv {

// Row m (0 .. BM - 1) of tile tl as y's NHWC row (the GEMM row); false past the output.
template <class Cfg> KILN_FN bool row_of(const Tile& tl, int m, i64& row) {
  using G = Geometry<Cfg>;
  if constexpr (G::ROWS_TILED || G::ROW_TILES) {
    row = i64(tl.m0) + m;
    return m < G::TILE_ROWS && row < G::ROWS;
  } else {
    const int p = tl.p0 + m / G::TQ, q = tl.q0 + m % G::TQ;
    row = (i64(tl.n) * Cfg::OH + p) * Cfg::OW + q;
    return p < Cfg::OH && q < Cfg::OW;
  }
}

// The epilogue from registers, where y's groups are not 16-byte aligned (!Geometry::VECTOR_Y):
// 32-bit pair stores (64-bit for f32) straight from the fragments. A thread holds two rows
// (m, m + 8) of BN / 8 channel pairs each (registers 4c + 2h and
// 4c + 2h + 1: pair c of row h). Each run of CHUNK pairs loads its bias and residual words
// before it stores any of y: the compiler may not move a load past a store to y (it could
// alias), and one load's latency exposed per pair cost 3-5x on the H100 (bench/results).
template <class Cfg>
KILN_FN void store_registers(const KernelArgs& args, WgmmaAcc<Cfg::BN>& acc, int g,
                             const Tile& tl) {
  using G = Geometry<Cfg>;
  using T = typename Cfg::T;
  using E = epilogue_of<Cfg>;
  using Pair = typename pick<sizeof(T) == 2, u32, u64>::type; // two elements as one word
  const auto y = arg<T>(args, G::kArgY);
  const int t = thread_linear() % 128, w = t / 32, lane = t % 32;
  constexpr int YP = G::YP;
  constexpr bool kPairs = G::O % 2 == 0; // bias, residual pairs aligned words
  constexpr bool kYPairs = kPairs && YP % 2 == 0;
  constexpr int PAIRS = Cfg::BN / 8;
  constexpr int CHUNK = PAIRS < 32 / int(sizeof(Pair)) ? PAIRS : 32 / int(sizeof(Pair));
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    i64 row; // y's NHWC row (GEMM row) of this pixel
    if (!row_of<Cfg>(tl, 64 * g + 16 * w + lane / 4 + 8 * h, row)) continue;
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

// Byte `byte` (0..127) of row R of a warp's staging buffer (the epilogue below): its 16-byte
// chunk at chunk ^ (R % 8), so that 8 rows x 4 lanes' pairs and 8 lanes' chunks of a row
// each meet every bank once.
KILN_FN int staged_at(int R, int byte) {
  return R * 128 + ((byte / 16) ^ (R % 8)) * 16 + byte % 16;
}

// Slice `sl`'s residual rows and bias into `buf` by cp.async (the epilogue below): this lane
// copies 16-byte chunk k of the four rows it will store (srow, sin), lanes 0-7 chunk `lane`
// of the bias; what lies past the output is zero-filled, never read.
template <class Cfg>
KILN_FN void fetch_slice(const KernelArgs& args, Shared<u8> buf, const Tile& tl, int sl,
                         const i64 (&srow)[4], const bool (&sin)[4], int lane) {
  using G = Geometry<Cfg>;
  using T = typename Cfg::T;
  using E = epilogue_of<Cfg>;
  constexpr int SLICE = 128 / int(sizeof(T)), PER_CHUNK = 16 / int(sizeof(T));
  const int k = lane % 8, o = tl.o0 + sl * SLICE + k * PER_CHUNK;
  if constexpr (E::has_residual) {
    const Global<const T> res = arg<const T>(args, G::kArgRes);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int R = 4 * j + lane / 8;
      const bool valid = sin[j] && o < G::O;
      cp_async_16(view_as<T>(buf + staged_at(R, 16 * k)), valid ? res + (srow[j] * G::O + o) : res,
                  valid);
    }
  }
  if constexpr (E::has_bias)
    if (lane < 8) {
      const Global<const T> bias = arg<const T>(args, G::kArgBias);
      cp_async_16(view_as<T>(buf + 16 * 128 + 16 * k), o < G::O ? bias + o : bias, o < G::O);
    }
}

// The four rows of warp w's 16 (of rows 64g..) that `lane` fetches and stores (4j + lane / 8),
// as y's rows; false past the output (their residual is zero-filled, their pairs never
// stored). Chunk lane % 8 of a row is this lane's.
template <class Cfg>
KILN_FN void lane_rows(const Tile& tl, int g, int w, int lane, i64 (&srow)[4], bool (&sin)[4]) {
#pragma unroll
  for (int j = 0; j < 4; ++j)
    sin[j] = row_of<Cfg>(tl, 64 * g + 16 * w + 4 * j + lane / 8, srow[j]);
}

// The first slice's residual rows and bias for rows 64g.. of tile tl, by cp.async into the
// staging of consumer `slot`, issued before the tile's main loop so that their latency hides
// under its wgmmas; store_staged(..., prefetched = true) then skips that fetch. The H200's
// ncu of 2026-11-28b found 7-9% of all warps' stall samples at the epilogue's cp.async waits
// in resnet50's 3x3 convs, both halves' with ping-pong (bench/results/h200_2026-11-28b,
// stall_split.py). Nothing without loads.
template <class Cfg>
KILN_FN void prefetch_epilogue(const KernelArgs& args, int g, const Tile& tl, Shared<u8> staging,
                               int slot) {
  using G = Geometry<Cfg>;
  if constexpr (G::VECTOR_Y && G::STAGED_LOADS) {
    const int t = thread_linear() % 128, w = t / 32, lane = t % 32;
    i64 srow[4];
    bool sin[4];
    lane_rows<Cfg>(tl, g, w, lane, srow, sin);
    fetch_slice<Cfg>(args, staging + (4 * slot + w) * G::STAGING_PER_WARP, tl, 0, srow, sin, lane);
    cp_async_commit();
  }
}

// The epilogue through shared memory (Geometry::VECTOR_Y), a 128-byte slice of channels (64
// f16/bf16 or 32 f32) at a time, in the warp's staging: 16 rows x 128 bytes (and, with a bias
// or residual, 128 bytes of bias; two such buffers, alternating). The slice's residual rows
// and bias come by cp.async, issued a slice ahead (the first at the tile's start), so no
// load's latency stands between stores (the compiler may not move a load past a store to y,
// which it could alias: the H100 run of 2026-11-26 measured the convs with a residual 3-5x
// slower than predicted when each load waited so). Each lane then applies bias, residual
// and activation to its fragment pairs in float, in place: its pair of y goes where its pair
// of the residual was. After a __syncwarp each lane reads back 16-byte chunks of whole rows
// and stores them to y, four rows of 128 bytes per warp instruction (swizzled: staged_at).
// It replaces a 4x4 transpose of pairs across each quad by
// shuffles, whose run-time-indexed selects compiled into ~130 dependent, branching
// instructions per 8 channels: with one warp per scheduler (1 block per SM), the H100 stored
// at ~3 bytes per clock per SM (bench/results/h100_2026-11-26b).
// `first`: the buffer slice 0 is in (0, or where a previous store's chained fetch left it);
// `next_g` (>= 0): rows 64 next_g.. of the same tile store next (ping-pong's second half), and
// their first slice is fetched in place of a slice after this store's last, so that its
// latency hides under this store (the H200's ncu of 2026-11-28b found the ping-pong halves'
// fetches among the epilogue's cp.async waits). Returns the buffer the next store's first slice
// is in.
template <class Cfg>
KILN_FN int store_staged(const KernelArgs& args, WgmmaAcc<Cfg::BN>& acc, int g, const Tile& tl,
                         Shared<u8> staging, int slot, bool prefetched, int first, int next_g) {
  using G = Geometry<Cfg>;
  using T = typename Cfg::T;
  using E = epilogue_of<Cfg>;
  using Pair = typename pick<sizeof(T) == 2, u32, u64>::type; // two elements as one word
  constexpr int SLICE = 128 / int(sizeof(T));                 // channels in a slice: 64 or 32
  constexpr int GROUPS = SLICE / 8; // the fragments' 8-channel groups in a slice
  constexpr int SLICES = Cfg::BN / SLICE;
  constexpr int PER_CHUNK = 16 / int(sizeof(T)); // channels in a 16-byte chunk
  constexpr bool LOADS = G::STAGED_LOADS;
  const int t = thread_linear() % 128, w = t / 32, lane = t % 32, q = lane % 4, r = lane / 4;
  const Shared<u8> mine = staging + (4 * slot + w) * G::STAGING_PER_WARP;
  i64 srow[4];
  bool sin[4];
  lane_rows<Cfg>(tl, g, w, lane, srow, sin);
  const int k = lane % 8;
  // A lane copies into exactly the chunks it reads back, after reading them back: no fetch
  // waits for the other lanes (the bias, which every lane reads, is rewritten only after the
  // warp's sync_warp past its last read). `prefetched`: slice 0's copies are in flight
  // already (prefetch_epilogue), one commit group as here.
  if constexpr (LOADS) {
    if (!prefetched) {
      fetch_slice<Cfg>(args, mine + first * G::STAGING_BUFFER, tl, 0, srow, sin, lane);
      cp_async_commit();
    }
  }
  int after = first; // the buffer after the last slice's
#pragma unroll // constant register indices: the accumulators stay in registers
  for (int sl = 0; sl < SLICES; ++sl) {
    const int base = tl.o0 + sl * SLICE; // the slice's first channel
    if (base >= G::O) break;             // the same for the whole warp
    const int b = (sl + first) % 2;
    after = 1 - b;
    const Shared<u8> buf = mine + b * (LOADS ? G::STAGING_BUFFER : 0);
    if constexpr (LOADS) {
      const Shared<u8> other = mine + (1 - b) * G::STAGING_BUFFER;
      if (sl + 1 < SLICES && base + SLICE < G::O)
        fetch_slice<Cfg>(args, other, tl, sl + 1, srow, sin, lane);
      else if (next_g >= 0) { // the next half's first slice: its rows, the same chunks a lane's
        i64 nrow[4];
        bool nin[4];
        lane_rows<Cfg>(tl, next_g, w, lane, nrow, nin);
        fetch_slice<Cfg>(args, other, tl, 0, nrow, nin, lane);
      }
      cp_async_commit();
      cp_async_wait<1>(); // this lane's copies of slice sl have landed
    }
    sync_warp(); // every lane's have (and without loads: the previous readback is done)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int R = r + 8 * h;
#pragma unroll
      for (int c = 0; c < GROUPS; ++c) {
        const int i = 4 * (sl * GROUPS + c) + 2 * h;       // pair c of row h in the fragments
        const int byte = (8 * c + 2 * q) * int(sizeof(T)); // in the row's 128
        const int at = staged_at(R, byte);
        Pair bw = 0, rw = 0; // zero bits: 0.0 in every T
        if constexpr (E::has_bias) bw = view_as<const Pair>(buf + 16 * 128 + byte)[0];
        if constexpr (E::has_residual) rw = view_as<const Pair>(buf + at)[0];
        const T v0 = from_float<T>(E::apply(acc[i], to_float(lo<T>(bw)), to_float(lo<T>(rw))));
        const T v1 = from_float<T>(E::apply(acc[i + 1], to_float(hi<T>(bw)), to_float(hi<T>(rw))));
        view_as<Pair>(buf + at)[0] = pair(v0, v1);
      }
    }
    sync_warp();
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int R = 4 * j + lane / 8, o = base + k * PER_CHUNK;
      const Pack<u32, 4> v = view_as<Pack<u32, 4>>(buf + staged_at(R, 16 * k))[0];
      if (sin[j] && o < G::O)
        store16(view_as<uint4>(arg<T>(args, G::kArgY) + (srow[j] * G::YP + o)),
                make_uint4(v.e[0], v.e[1], v.e[2], v.e[3]));
    }
  }
  return after;
}

// The epilogue of rows 64g .. 64g + 63 of a tile: through shared memory in 16-byte accesses
// where the groups are aligned (in the staging of consumer warpgroup `slot`, the one storing;
// `prefetched`: its first slice's loads issued, by prefetch_epilogue or by the previous store
// into buffer `first`; `next_g`: the half whose first slice to fetch at the end: store_staged),
// else pairs from registers. Returns the buffer the next store's first slice is in.
template <class Cfg>
KILN_FN int store(const KernelArgs& args, WgmmaAcc<Cfg::BN>& acc, int g, const Tile& tl,
                  Shared<u8> staging, int slot, bool prefetched, int first = 0, int next_g = -1) {
  if constexpr (Geometry<Cfg>::VECTOR_Y)
    return store_staged<Cfg>(args, acc, g, tl, staging, slot, prefetched, first, next_g);
  else
    store_registers<Cfg>(args, acc, g, tl);
  return 0;
}

} // namespace kiln::hopper_conv
