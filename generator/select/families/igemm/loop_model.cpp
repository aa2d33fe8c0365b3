#include "generator/select/families/igemm/loop_model.hpp"

namespace kiln {

namespace {

// Per k tile (64 bytes of each row: KS = 2 mma k-steps of 8 words). Instruction counts per
// thread (one warp instruction per warp) beside the MMAs and fragment loads, fitted to the
// main loops of NVRTC 13 sm_90 instances (f16; cuobjdump -sass, the loop's instructions
// between its backward branch and target). Single fragment set, padded rows (resnet50, batch
// 32): 64x32 w2x2 69 per 8 HMMA, 128x64 w2x2 137 per 32, 128x128 w2x4 117 per 32, 128x128
// w2x2 196 per 64, the element loads of 128x64 w2x2 from NCHW 610 per 32; the model gives
// 73, 138, 114, 196 and 618. Double-buffered fragments from swizzled rows (resnet18's 3x3
// c128 convs at batch 8): 109, 169, 123 (w2x4: single set), 221 and 64x64 123 per 16; the
// model gives 103, 168, 114, 226 and 124.
constexpr int kTileKBytes = 64, kStepWords = 8;
constexpr double kTileOverhead = 24; // k0 / C, kw, kh, the tap; wait, barrier, commit, loop
constexpr double kCpAsyncA = 12;     // ih, iw, bound tests, selects, 64-bit address, LDGSTS
constexpr double kCpAsyncB = 11;     // row and range tests, address, LDGSTS
constexpr double kElementLoad = 16;  // per element of x: position, bounds, LDG, shift, or
constexpr double kWordStore = 1;     // STS of a packed word
// Double-buffered fragments: the loop rotated around the next tile's barrier, the lane's
// swizzled fragment offsets recomputed (ptxas rematerialises them rather than hold them).
constexpr double kDoubleBufferOverhead = 30;
// A fused gate (load_global.cuh's GATE), per 16-byte chunk of A: with cp.async, the landed
// chunk's 4 words read back, 4 words of gates loaded, each element widened, multiplied and
// narrowed (f16/bf16: 2 per word and a pack), 4 words stored, the chunk's bounds and address
// again; with element loads, per element the gate's load and the multiply. SASS (nvcc 13
// sm_90, efficientnet_b0's c144 1x1 projection, 64x32 w2x2, two chunks a thread): 207
// instructions per 8 HMMA in the loop, the model 195.
constexpr double kGateChunk = 4 + 4 + 4 + 6, kGateWord16 = 7, kGateWord32 = 1;
constexpr double kGateElement = 4;
// Latencies a warp waits that its own MMAs do not cover: every k tile begins at a barrier;
// with one fragment set, each k-step's fragments load right before its MMAs (double-buffered
// fragments load a k-step ahead, behind the MMAs).
constexpr double kSharedLoadClocks = 30, kBarrierClocks = 20;

} // namespace

MainLoop igemm_main_loop(const IgemmLoopShape& s) {
  const IgemmTile& t = s.tile;
  const double warps = t.wm * t.wn, threads = 32 * warps;
  const double wtm = t.bm / t.wm, wtn = t.bn / t.wn; // warp tile
  const double mt = wtm / 16, nt = wtn / 8;          // mma tiles of a warp
  const double ks = kTileKBytes / 4 / kStepWords;    // k-steps per k tile
  const double chunks = kTileKBytes / 16;            // 16-byte chunks of a row
  const double a_rows = t.bm * chunks / threads, b_rows = t.bn * chunks / threads;
  const bool tf32 = s.elem_bytes == 4;

  const double mmas_warp = mt * nt * ks; // per k tile
  const double mmas_block = mmas_warp * warps;
  // Fragment loads: ldmatrix.x4 per 16x8-word A fragment and per pair of B fragments, or one
  // 32-bit load per register; tf32 rounds each register (cvt.rna) but those of an operand
  // that arrives rounded.
  const double regs = 4 * mt + 2 * nt;
  const double frag_loads = s.ldmatrix ? mt + nt / 2 : regs;
  const double cvt = tf32 ? (s.a_tf32 ? 0 : 4 * mt) + (s.b_tf32 ? 0 : 2 * nt) : 0;
  const double vec = 16.0 / s.elem_bytes, words = 4;
  const double gate_chunk = kGateChunk + words * (tf32 ? kGateWord32 : kGateWord16);
  const double a_load =
      s.vec_a ? kCpAsyncA + (s.gate ? gate_chunk : 0)
              : vec * (kElementLoad + (s.gate ? kGateElement : 0)) + words * kWordStore;
  const double b_load = s.vec_b ? kCpAsyncB : vec * kElementLoad + words * kWordStore;
  const double per_tile = kTileOverhead + (t.frag_buffers == 2 ? kDoubleBufferOverhead : 0) +
                          a_rows * a_load + b_rows * b_load + ks * (frag_loads + cvt) + mmas_warp;

  MainLoop l;
  l.mma_flops = 2.0 * 16 * 8 * (tf32 ? 8 : 16);
  // Shared bytes per k tile: every row of both tiles stored once, and each warp reads its
  // warp tile's rows of A and B.
  const double stored = (t.bm + t.bn) * kTileKBytes;
  const double read = warps * (wtm + wtn) * kTileKBytes;
  // A gate on landed 16-byte chunks reads A's tile back and stores it again.
  const double gated = s.gate && s.vec_a ? 2.0 * t.bm * kTileKBytes : 0;
  l.smem_bytes_per_mma = (stored + read + gated) / mmas_block;
  l.issue_per_mma = per_tile / mmas_warp;
  l.mmas_per_step = mmas_warp;
  l.exposed_clocks_per_step = (t.frag_buffers == 2 ? 0 : ks * kSharedLoadClocks) + kBarrierClocks;
  l.global_bytes_in_flight_per_block = (s.stages - 1) * stored;
  l.global_bytes_per_mma = stored / mmas_block;
  return l;
}

} // namespace kiln
