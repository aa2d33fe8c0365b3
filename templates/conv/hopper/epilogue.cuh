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
  if constexpr (G::FLAT) {
    row = i64(tl.m0) + m;
    return row < G::ROWS;
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

// Pair j (0..3) of v, j known only at run time: selects, not a local-memory array.
KILN_FN float pick4(const float (&v)[4], int j) {
  return j == 0 ? v[0] : j == 1 ? v[1] : j == 2 ? v[2] : v[3];
}

// The epilogue in 16-byte accesses (Geometry::VECTOR_Y). In the fragments, the 4 lanes of a
// quad hold row r's channels 8c + 2q, 8c + 2q + 1 (q the lane's place in the quad) for every
// 8-channel group c; a 4x4 transpose of pairs across the quad (three shfl.xor) gives lane q
// all 8 channels of group 4b + q, 32 channels a block b. Then bias, residual and y move as
// 16-byte pieces (a warp's store: 8 rows x 64 bytes for 16-bit y) where the fragments stored
// 4-byte ones (8 rows x 16 bytes), a quarter of the store instructions. Each run of RUN
// blocks loads its bias and residual before it stores (the compiler may not move a load past
// a store to y, which it could alias).
template <class Cfg>
KILN_FN void store_vectors(const KernelArgs& args, WgmmaAcc<Cfg::BN>& acc, int g, const Tile& tl) {
  using G = Geometry<Cfg>;
  using T = typename Cfg::T;
  using E = epilogue_of<Cfg>;
  constexpr int V = 16 / int(sizeof(T)), PACKS = 8 / V; // 16-byte accesses per 8 channels
  // RUN blocks' bias and residual words in registers at once, 16 at most: beside BN 256's
  // 128 accumulators, 32 spilled (two consumers' 168-register cap, and one consumer's 232 in
  // bf16 with a residual).
  constexpr int BLOCKS = Cfg::BN / 32, BUDGET = 16;
  constexpr int PER_BLOCK = 4 * PACKS * ((E::has_bias ? 1 : 0) + (E::has_residual ? 1 : 0));
  constexpr int FIT = PER_BLOCK > 0 ? BUDGET / PER_BLOCK : BLOCKS;
  constexpr int RUN = FIT < 1 ? 1 : FIT > BLOCKS ? BLOCKS : FIT;
  static_assert(BLOCKS % RUN == 0, "runs of whole blocks");
  using P = Pack<T, V>;
  const int t = thread_linear() % 128, w = t / 32, lane = t % 32, q = lane % 4;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    i64 row; // all four lanes of a quad share it: the shuffles below stay convergent
    const bool in = row_of<Cfg>(tl, 64 * g + 16 * w + lane / 4 + 8 * h, row);
#pragma unroll // constant register indices: the accumulators stay in registers
    for (int b0 = 0; b0 < BLOCKS; b0 += RUN) {
      P bias[RUN][PACKS] = {}, res[RUN][PACKS] = {};
#pragma unroll
      for (int j = 0; j < RUN; ++j) {
        const int o = tl.o0 + 32 * (b0 + j) + 8 * q;
        if (!in || o >= G::O) continue; // O % 8 == 0: a group is all in or all out
#pragma unroll
        for (int k = 0; k < PACKS; ++k) {
          if constexpr (E::has_bias)
            bias[j][k] = view_as<const P>(arg<const T>(args, G::kArgBias) + o)[k];
          if constexpr (E::has_residual)
            res[j][k] = view_as<const P>(arg<const T>(args, G::kArgRes) + (row * G::O + o))[k];
        }
      }
#pragma unroll
      for (int j = 0; j < RUN; ++j) {
        const int b = b0 + j, o = tl.o0 + 32 * b + 8 * q;
        // v[c]: this lane's pair of group 4b + c; out[p]: pair p of group 4b + q.
        float v0[4], v1[4], out0[4], out1[4];
#pragma unroll
        for (int c = 0; c < 4; ++c) {
          const int i = 4 * (4 * b + c) + 2 * h;
          v0[c] = acc[i], v1[c] = acc[i + 1];
        }
#pragma unroll
        for (int k = 0; k < 4; ++k) { // lane q ^ k sends its pair of group 4b + q
          const float x0 = pick4(v0, q ^ k), x1 = pick4(v1, q ^ k);
          const float y0 = k == 0 ? x0 : shfl_xor(x0, k), y1 = k == 0 ? x1 : shfl_xor(x1, k);
#pragma unroll
          for (int p = 0; p < 4; ++p)
            if (p == (q ^ k)) out0[p] = y0, out1[p] = y1;
        }
        if (!in || o >= G::O) continue;
        // y as 32-bit words, 4 to a 16-byte store.
        constexpr int PER_WORD = 4 / int(sizeof(T)) > 0 ? 4 / int(sizeof(T)) : 1;
        Pack<u32, 4> words[PACKS];
#pragma unroll
        for (int e = 0; e < 8; ++e) {
          const float a = e % 2 ? out1[e / 2] : out0[e / 2];
          const u32 bits = bits_of(from_float<T>(
              E::apply(a, to_float(bias[j][e / V].e[e % V]), to_float(res[j][e / V].e[e % V]))));
          u32& word = words[e / V].e[e % V / PER_WORD];
          if (e % PER_WORD == 0)
            word = bits;
          else
            word |= bits << 16;
        }
        const Global<uint4> dst = view_as<uint4>(arg<T>(args, G::kArgY) + (row * G::YP + o));
#pragma unroll
        for (int k = 0; k < PACKS; ++k)
          store16(dst + k, make_uint4(words[k].e[0], words[k].e[1], words[k].e[2], words[k].e[3]));
      }
    }
  }
}

// The epilogue for one tile: 16-byte accesses where the groups are aligned, else pairs.
template <class Cfg>
KILN_FN void store(const KernelArgs& args, WgmmaAcc<Cfg::BN>& acc, int g, const Tile& tl) {
  if constexpr (Geometry<Cfg>::VECTOR_Y)
    store_vectors<Cfg>(args, acc, g, tl);
  else
    store_registers<Cfg>(args, acc, g, tl);
}

} // namespace kiln::hopper_conv
