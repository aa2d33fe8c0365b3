#include "generator/select/families/hopper/wgmma_loop.hpp"

namespace kiln {

namespace {

// The main loop as the cost model sees it (cost/main_loop.hpp), per warp's share of one wgmma
// (a warpgroup instruction: each of its 4 warps computes 16 of its 64 rows). A stage holds a
// 128-byte slice of k of the block's BM = 64 * consumers pixel rows and BN weight rows: 4
// wgmma k-steps, which each consumer warpgroup issues on its 64 rows.
//
// - Peak fraction: warp-specialised TMA + wgmma kernels reach about 75% of an H100's dense
//   peak where mma.sync kernels reach about 35-45% (FlashAttention-3 against -2; cuDNN 9's
//   sm_90a convs are all of this kind). With kOutsideLoopEfficiency (cost/main_loop.hpp: the
//   0.8 both tensor-core families keep for what lies outside the loop), two consumer warpgroups
//   (one wgmma group in flight each while the other waits) are taken to run the loop at the peak,
//   one at 0.875 of it (0.7 overall). Stated, not measured (kiln tune's calibration replaces it on
//   a GPU).
// - Shared memory: the TMA's stores of both tiles, and each consumer warpgroup's wgmma
//   operand reads of its 64 A rows and all BN B rows (assumed read once per warpgroup; if
//   each warp read B, BN 64 and 128 tiles would be slower still: a GPU's measurements
//   decide), and with tf32 the rounding pass's read and write of every row. At the
//   descriptor's 128 bytes per clock this caps BN 64 at 0.57 of peak, BN 128 at 0.8, BN 256
//   at 1 (two consumers).
// - Issue: per stage and warp, 4 wgmmas and about 8 synchronising instructions (fences,
//   commit, wait, the stage's mbarrier wait and release); tf32's rounding pass about 7 per
//   16-byte chunk a thread rounds (load, 4 cvt.rna, store, address).
// - Latency: the producer warp keeps STAGES - 1 stages in flight; no consumer waits on its
//   own loads, so nothing is exposed per step but what the ring's bytes do not cover.
constexpr double kWgmmaKSteps = 4;   // per 128-byte stage (a narrower swizzle: fewer)
constexpr double kSyncPerStage = 8;  // per warp
constexpr double kRoundPerChunk = 7; // tf32 rounding pass, per 16-byte chunk a thread rounds

} // namespace

MainLoop wgmma_main_loop(int consumers, int bn, int es, int stages, bool b_tf32, bool a_tf32,
                         int swizzle, ClusterShape cl) {
  const double bm = 64.0 * consumers, row = swizzle;  // bytes of k per row per stage
  const double ksteps = kWgmmaKSteps * swizzle / 128; // wgmma k steps per stage
  const double warp_mmas = ksteps * 4 * consumers;    // per stage and block
  const double stored = (bm + bn) * row;
  const double read = consumers * (64 + bn) * row;
  // tf32: every row read and written again, but B's where the weights arrive rounded and A's
  // where x does; a consumer thread rounds its share of its 64 rows and of a 1 / consumers
  // share of B.
  const double a_rounded = a_tf32 ? 0 : 64, b_rounded = b_tf32 ? 0 : bn;
  const double rounded = es == 4 ? 2 * (a_rounded * consumers + b_rounded) * row : 0;
  const double chunks_per_thread = (a_rounded + b_rounded / consumers) * row / 16 / 128;
  const bool pass = es == 4 && !(a_tf32 && b_tf32);
  MainLoop l;
  l.mma_flops = 2.0 * 16 * bn * (32.0 / es);
  l.peak_fraction = consumers == 2 ? 1.0 : 0.875;
  l.smem_bytes_per_mma = (stored + read + rounded) / warp_mmas;
  l.issue_per_mma =
      (ksteps + kSyncPerStage + (pass ? chunks_per_thread * kRoundPerChunk : 0)) / ksteps;
  l.mmas_per_step = ksteps;
  l.exposed_clocks_per_step = 0;
  l.global_bytes_in_flight_per_block = (stages - 1) * stored;
  l.global_bytes_per_mma = stored / warp_mmas;
  l.l2_bytes_per_mma = (bm / cl.n + double(bn) / cl.m) * row / warp_mmas;
  return l;
}

} // namespace kiln
