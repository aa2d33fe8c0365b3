// The implicit GEMM's compile-time geometry (conv/implicit_gemm.cuh describes the Cfg): the
// GEMM extents, block and warp tiles, shared-memory rows, the pooled tiling of POOL, the
// argument order; and where a block and a warp sit in it at run time.
#pragma once

#include "common/epilogue.cuh"

#if defined(KILN_CUDA)
#define KILN_IGEMM_UNROLL _Pragma("unroll")
#else
#define KILN_IGEMM_UNROLL
#endif

namespace kiln::conv::igemm {

template <class T> struct is_f32 { static constexpr bool value = false; };
template <> struct is_f32<float> { static constexpr bool value = true; };

// The pooled tiling of POOL (conv2d.pool_forward): a block's BM rows are the FH x FW footprint
// of PTH x PTW pooled outputs; without POOL, one "tile" of one pixel.
template <class Cfg, bool = Cfg::POOL> struct PoolTile {
  static constexpr int FH = 1, FW = 1, TILES_W = 1, TILES = 1;
};
template <class Cfg> struct PoolTile<Cfg, true> {
  static constexpr int FH = (Cfg::PTH - 1) * Cfg::PSH + Cfg::PKH;
  static constexpr int FW = (Cfg::PTW - 1) * Cfg::PSW + Cfg::PKW;
  static constexpr int TILES_W = (Cfg::POW + Cfg::PTW - 1) / Cfg::PTW;
  static constexpr int TILES = (Cfg::POH + Cfg::PTH - 1) / Cfg::PTH * TILES_W;
};

// SPLIT_REDUCE: the split's sum and epilogue in the kernel (split_reduce.cuh); false where a
// Cfg does not say.
template <class Cfg, class = void> struct split_reduce_of { static constexpr bool value = false; };
template <class Cfg> struct split_reduce_of<Cfg, decltype(void(Cfg::SPLIT_REDUCE))> {
  static constexpr bool value = Cfg::SPLIT_REDUCE;
};

// GATE: x is read scaled per (n, c) by gate [N][C] (a squeeze-excite gate fused into its
// consumer, generator/rewrite/gates.cpp); false where a Cfg does not say.
template <class Cfg, class = void> struct gate_of { static constexpr bool value = false; };
template <class Cfg> struct gate_of<Cfg, decltype(void(Cfg::GATE))> {
  static constexpr bool value = Cfg::GATE;
};

template <class Cfg> struct Geometry {
  using T = typename Cfg::T;
  using I = typename pick<Cfg::IDX64, i64, int>::type;
  using PT = PoolTile<Cfg>;
  static constexpr bool TF32 = is_f32<T>::value, POOL = Cfg::POOL, GATE = gate_of<Cfg>::value;
  static constexpr int C = Cfg::C, H = Cfg::H, W = Cfg::W, O = Cfg::O, KH = Cfg::KH, KW = Cfg::KW;
  // The output size is the instance's (padding after the input may differ from before it:
  // tiles of a tiled segment pad only at the image border).
  static constexpr int OH = Cfg::OH, OW = Cfg::OW;
  static constexpr I M = POOL ? I(Cfg::N) * PT::TILES * Cfg::BM : I(Cfg::N) * OH * OW;
  static constexpr int K = KH * KW * C;
  static constexpr int BM = Cfg::BM, BN = Cfg::BN, BK = Cfg::BK, STAGES = Cfg::STAGES;
  static constexpr int THREADS = 32 * Cfg::WM * Cfg::WN;
  static constexpr int WTM = BM / Cfg::WM, WTN = BN / Cfg::WN; // warp tile
  static constexpr int MT = WTM / 16, NT = WTN / 8;            // mma tiles per warp
  static constexpr int ES = int(sizeof(T));
  static constexpr int EPW = 4 / ES;                           // elements per 32-bit word
  static constexpr int VEC = 16 / ES;                          // elements per 16-byte chunk
  static constexpr int WPR = BK * ES / 4;                      // data words per shared row
  static constexpr int CPR = WPR / 4;                          // 16-byte chunks per shared row
  static constexpr int ROW = WPR + Cfg::PAD;                   // words per shared row
  // SWIZZLE: row r's 16-byte chunk c sits at chunk c ^ ((r / LINE_ROWS) % CPR), so the eight
  // rows one fragment load (or one ldmatrix matrix) reads at the same chunk fall on eight
  // distinct 16-byte bank groups without padding; the pattern repeats every 8 rows.
  static constexpr bool SWIZZLE = Cfg::SWIZZLE;
  static constexpr int LINE_ROWS = 128 / (WPR * 4 > 128 ? 128 : WPR * 4); // rows per 128 bytes
  KILN_FN static int chunk_at(int r, int c) { return SWIZZLE ? c ^ ((r / LINE_ROWS) % CPR) : c; }
  static constexpr int KS = WPR / 8;                           // mma k-steps per k tile
  static constexpr int A_STAGE = BM * ROW, B_STAGE = BN * ROW; // words of a stage's tiles
  // A stage is its A tile then its B tile: one offset (a multiple of STAGE) places both.
  static constexpr int STAGE = A_STAGE + B_STAGE;
  // Dynamic shared memory: the pipeline, or POOL's staged tile (BN + 1 floats a row) if larger.
  static constexpr int SMEM_WORDS = STAGES * STAGE > (POOL ? BM * (BN + 1) : 0) ? STAGES* STAGE
                                                                                : BM*(BN + 1);
  static constexpr int NTN = (O + BN - 1) / BN;                // output-channel tiles
  static constexpr int SPLIT = Cfg::SPLIT;
  static constexpr I TILES = (M + BM - 1) / BM * NTN;
  static constexpr int K16 = (K + 15) / 16;
  // Arguments: x, w, [b], [residual], [nnz], y (SPLIT > 1: x, w, partial; SPLIT_REDUCE: y,
  // partial, tickets), then [gate] last.
  static constexpr int kArgB = 2, kArgRes = kArgB + (Cfg::HAS_BIAS ? 1 : 0);
  static constexpr int kArgNnz = kArgRes + (Cfg::HAS_RESIDUAL ? 1 : 0);
  static constexpr int kArgY = kArgNnz + (Cfg::GUARD ? 1 : 0);
  static constexpr int kArgGate = kArgY + (split_reduce_of<Cfg>::value ? 3 : 1);

  static_assert(BK * ES % 64 == 0, "a k tile is an even number of mma k-steps of 32 bytes "
                                   "(the main loop's two fragment buffers alternate in it)");
  static_assert(WTM % 16 == 0 && WTN % 8 == 0 && WTM * Cfg::WM == BM && WTN * Cfg::WN == BN,
                "warp tiles are whole 16x8 mma tiles");
  static_assert(STAGES >= 2, "at least double buffering");
  static_assert(!Cfg::LDMATRIX || NT % 2 == 0, "ldmatrix loads B for two n tiles at once");
  static_assert(Cfg::PAD % 4 == 0, "shared rows stay 16-byte aligned");
  static_assert(!SWIZZLE || (Cfg::PAD == 0 && 8 % CPR == 0 && (THREADS / CPR) % 8 == 0),
                "a swizzled row is unpadded, a power-of-two number of chunks up to 128 bytes; "
                "a thread's rows share one swizzle (they lie a multiple of 8 rows apart)");
  static_assert(!Cfg::VEC_A || C % VEC == 0, "16-byte A loads need C % VEC == 0");
  static_assert(!Cfg::VEC_A || !Cfg::X_NCHW, "an NCHW x is loaded element by element");
  static_assert(!Cfg::VEC_B || K % VEC == 0, "16-byte B loads need K % VEC == 0");
  static_assert(THREADS % CPR == 0 && (BM * CPR) % THREADS == 0 && (BN * CPR) % THREADS == 0,
                "the loaders cover each tile exactly");
  static_assert(SPLIT >= 1 && SPLIT <= (K + 15) / 16, "every k range holds 16 k or more");
  static_assert(SPLIT == 1 || split_reduce_of<Cfg>::value ||
                    (!Cfg::HAS_BIAS && !Cfg::HAS_RESIDUAL && act_of<Cfg>::value == Act::none &&
                     !Cfg::GUARD),
                "partial sums carry no epilogue (partial.sum applies it)");
  static_assert(!GATE || !POOL, "a gated x is not pooled after (conv2d.pool_forward has none)");
  static_assert(!a_tf32_of<Cfg>::value || (TF32 && !GATE),
                "A_TF32: float x that arrives rounded (a gated x is a product: rounded here)");
  static_assert(!POOL || (SPLIT == 1 && !Cfg::HAS_RESIDUAL && !Cfg::GUARD && PT::FH * PT::FW <= BM),
                "a pooled tile's footprint fits the block's rows");
};

// The block's tile and range of k: block i reduces range i / TILES of tile j = i % TILES,
// (j / NTN, j % NTN) (output-channel tiles fastest: neighbours share their A rows).
template <class Cfg> struct BlockTile {
  using G = Geometry<Cfg>;
  using I = typename G::I;
  int split;        // the k range (0 without SPLIT)
  I m_block;        // first GEMM row
  int n_block;      // first output channel
  int kb, ke;       // the range [kb, ke) of k (all of K without SPLIT)
  int kt_first, KT; // the k tiles that hold it

  KILN_FN BlockTile() {
    split = G::SPLIT == 1 ? 0 : int(I(blockIdx.x) / G::TILES);
    const I tile = G::SPLIT == 1 ? I(blockIdx.x) : I(blockIdx.x) % G::TILES;
    const int tile_n = int(tile % G::NTN);
    m_block = I(tile / G::NTN) * G::BM;
    n_block = tile_n * G::BN;
    kb = G::SPLIT == 1 ? 0 : 16 * int(i64(split) * G::K16 / G::SPLIT);
    ke = G::SPLIT == 1 || split + 1 == G::SPLIT ? G::K
                                                : 16 * int(i64(split + 1) * G::K16 / G::SPLIT);
    kt_first = kb / G::BK;
    KT = (ke + G::BK - 1) / G::BK - kt_first;
  }
};

// Where the calling lane's warp tile lies in the block tile, and the lane in the mma
// fragments: group g (row within 8) and t (word within 4).
template <class Cfg> struct WarpTile {
  int warp_m, warp_n, g, t;
  KILN_FN WarpTile() {
    const int warp = warp_id(), lane = lane_id();
    g = lane >> 2, t = lane & 3;
    warp_m = warp % Cfg::WM, warp_n = warp / Cfg::WM;
  }
};

} // namespace kiln::conv::igemm
