#include "generator/select/families/hopper/wgmma_loop.hpp"

namespace kiln {

namespace {

// The main loop as the cost model sees it (cost/main_loop.hpp), per warp's share of one wgmma
// (a warpgroup instruction: each of its 4 warps computes 16 of its 64 rows). A stage holds a
// 128-byte slice of k of the block's BM = 64 * consumers pixel rows and BN weight rows: 4
// wgmma k-steps, which each consumer warpgroup issues on its 64 rows.
//
// - Peak fraction: warp-specialised TMA + wgmma kernels reach about 75% of an H100's dense
//   peak where mma.sync kernels reach about 35-45% (FlashAttention-3 against -2). With
//   kOutsideLoopEfficiency (cost/main_loop.hpp), two consumer warpgroups are taken to run the
//   loop at the peak, one at 0.875 of it. Stated, not measured: the weight gradient's
//   (wgrad_wgmma.cpp). The forward conv prices its tiles by what a GPU measured instead
//   (wgmma_tile_serial_clocks below).
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

// Measured: each swizzle row of k a tile reads costs the consumers about 400 clocks beyond its
// wgmmas, with one consumer warpgroup or two, a row a stage or several (KBLOCKS), and its
// epilogue 9.2 clocks per 128 bytes it writes. A least-squares fit of 88 lone pixel tiles on an
// H100 (bench/results/h100_2026-11-27c/epilogue_fit.txt: the wgmma clocks at the tensor peak +
// 399 x rows + 9.2 x output bytes / 128, rms log error 0.126) predicts the H200's 15 lone tiles
// of 2026-11-28 at rms 0.11 and 32 ping-pong ones (without their epilogue) at 0.19
// (bench/results/h200_2026-11-28/fit_check.py), among them the stem's 32-byte rows (16 a tile:
// 825 us measured, 829 fitted) and its taps folded into 128-byte rows (4 a tile: 363, 367);
// 4 rows of 32 bytes a stage took 805.
double wgmma_tile_serial_clocks(double k_rows, double output_bytes) {
  return 399.4 * k_rows + 9.2 * output_bytes / 128;
}

} // namespace kiln
