// Results of warp collectives once every lane has arrived (included by launch.cpp only):
// shuffles and ballot as the CUDA programming guide defines them, and mma.sync with the
// per-thread fragment layouts of the PTX ISA (documented in device_cuda.cuh). Products of
// f16, bf16 and tf32 operands are exact in float; they are accumulated in float in k order.
#pragma once

#include "runtime/emu/device/report.hpp"
#include "runtime/half.hpp"

#include <bit>
#include <cmath>

namespace kiln::emu {

namespace {

// Lanes [0, n) of a warp; lanes a partial last warp lacks read their own value.
void complete_shuffle(Fiber* const* lane, int n, WarpOp op) {
  u64 v[kWarp];
  for (int l = 0; l < n; ++l)
    v[l] = lane[l]->value;
  if (op == WarpOp::Ballot) {
    u32 bits = 0;
    for (int l = 0; l < n; ++l)
      bits |= u32(v[l] != 0) << l;
    for (int l = 0; l < n; ++l)
      lane[l]->value = bits;
    return;
  }
  for (int l = 0; l < n; ++l) {
    const Fiber& f = *lane[l];
    const int w = f.width, group = l & ~(w - 1);
    int src = l;
    switch (op) {
    case WarpOp::ShflIdx:
    case WarpOp::LdmatrixRows: src = group + (f.param & (w - 1)); break;
    case WarpOp::ShflXor: src = l ^ f.param; break;
    case WarpOp::ShflDown: src = (l & (w - 1)) + f.param < w ? l + f.param : l; break;
    default: break;
    }
    if (src < 0 || src >= group + w || src >= n) src = l; // a later group or no such lane
    lane[l]->value = v[src];
  }
}

float f16_lo(u32 r) { return half_bits_to_float(u16(r & 0xffffu)); }
float f16_hi(u32 r) { return half_bits_to_float(u16(r >> 16)); }
float bf16_lo(u32 r) { return bf16_bits_to_float(u16(r & 0xffffu)); }
float bf16_hi(u32 r) { return bf16_bits_to_float(u16(r >> 16)); }
// The tensor core reads a tf32 operand's sign, exponent and top 10 mantissa bits.
float tf32(u32 r) { return std::bit_cast<float>(r & 0xffffe000u); }

void complete_mma(Fiber* const* lane, WarpOp op) {
  float A[16][16], B[16][8], C[16][8];
  const bool is_tf32 = op == WarpOp::MmaTf32;
  const int K = is_tf32 ? 8 : 16;
  const auto lo = op == WarpOp::MmaBf16 ? bf16_lo : f16_lo;
  const auto hi = op == WarpOp::MmaBf16 ? bf16_hi : f16_hi;
  for (int l = 0; l < kWarp; ++l) {
    const int g = l >> 2, t = l & 3;
    const u32* in = lane[l]->in;
    if (is_tf32) {
      A[g][t] = tf32(in[0]);
      A[g + 8][t] = tf32(in[1]);
      A[g][t + 4] = tf32(in[2]);
      A[g + 8][t + 4] = tf32(in[3]);
      B[t][g] = tf32(in[4]);
      B[t + 4][g] = tf32(in[5]);
    } else {
      A[g][2 * t] = lo(in[0]);
      A[g][2 * t + 1] = hi(in[0]);
      A[g + 8][2 * t] = lo(in[1]);
      A[g + 8][2 * t + 1] = hi(in[1]);
      A[g][2 * t + 8] = lo(in[2]);
      A[g][2 * t + 9] = hi(in[2]);
      A[g + 8][2 * t + 8] = lo(in[3]);
      A[g + 8][2 * t + 9] = hi(in[3]);
      B[2 * t][g] = lo(in[4]);
      B[2 * t + 1][g] = hi(in[4]);
      B[2 * t + 8][g] = lo(in[5]);
      B[2 * t + 9][g] = hi(in[5]);
    }
    C[g][2 * t] = std::bit_cast<float>(in[6]);
    C[g][2 * t + 1] = std::bit_cast<float>(in[7]);
    C[g + 8][2 * t] = std::bit_cast<float>(in[8]);
    C[g + 8][2 * t + 1] = std::bit_cast<float>(in[9]);
  }
  float D[16][8];
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 8; ++j) {
      float acc = C[i][j];
      for (int k = 0; k < K; ++k)
        acc = std::fma(A[i][k], B[k][j], acc);
      D[i][j] = acc;
    }
  for (int l = 0; l < kWarp; ++l) {
    const int g = l >> 2, t = l & 3;
    u32* out = lane[l]->out;
    out[0] = std::bit_cast<u32>(D[g][2 * t]);
    out[1] = std::bit_cast<u32>(D[g][2 * t + 1]);
    out[2] = std::bit_cast<u32>(D[g + 8][2 * t]);
    out[3] = std::bit_cast<u32>(D[g + 8][2 * t + 1]);
  }
}

// An ldmatrix reads each 8x8 matrix (16 bytes from each of the 8 row addresses of lanes
// 8j..8j+7) in one shared-memory wavefront only when the rows fall on distinct groups of 4
// banks: the rows' 16-byte units, taken mod 8, differ (two lanes at the same address share a
// broadcast). Otherwise the hardware replays the load, which the kernels' row layouts
// (padding or an XOR swizzle) exist to avoid.
void check_ldmatrix_banks(Fiber* const* lane, int n, const char* arena, int w) {
  for (int j = 0; j < n / 8; ++j) {
    u64 unit_of_group[8];
    int lane_of_group[8];
    for (int g = 0; g < 8; ++g)
      lane_of_group[g] = -1;
    for (int r = 0; r < 8; ++r) {
      const int l = 8 * j + r;
      const u64 unit = (lane[l]->value - u64(reinterpret_cast<uptr>(arena))) >> 4;
      const int g = int(unit & 7);
      if (lane_of_group[g] >= 0 && unit_of_group[g] != unit)
        fail("bank conflict: ldmatrix matrix %d of warp %d (%s:%d): the rows of lanes %d and %d "
             "(shared bytes %llu and %llu) fall on the same banks; pad or swizzle the rows",
             j, w, lane[l]->site.file, lane[l]->site.line, lane_of_group[g], l,
             (unsigned long long)(unit_of_group[g] << 4), (unsigned long long)(unit << 4));
      lane_of_group[g] = l, unit_of_group[g] = unit;
    }
  }
}

bool is_mma(WarpOp op) {
  return op == WarpOp::MmaF16 || op == WarpOp::MmaBf16 || op == WarpOp::MmaTf32;
}

} // namespace

// Computes the collective of warp w (every lane of it has arrived) and releases its lanes.
inline void complete_warp(Block& b, int w) {
  const int first = w * kWarp, n = std::min(kWarp, b.nthreads - first);
  Fiber* lane[kWarp] = {};
  for (int l = 0; l < n; ++l)
    lane[l] = &fiber_at(b, first + l);
  for (int l = 1; l < n; ++l)
    if (lane[l]->op != lane[0]->op)
      fail("the lanes of warp %d are at different warp collectives: %s", w,
           describe_waits(b, first, first + n).c_str());
  if (is_mma(lane[0]->op))
    complete_mma(lane, lane[0]->op);
  else if (lane[0]->op == WarpOp::LdmatrixRows && (b.checks & KILN_EMU_CHECK_BANKS))
    check_ldmatrix_banks(lane, n, b.arena, w), complete_shuffle(lane, n, lane[0]->op);
  else
    complete_shuffle(lane, n, lane[0]->op);
  for (int l = 0; l < n; ++l)
    lane[l]->wait = Wait::None;
  b.warp_arrived[w] = 0;
}

} // namespace kiln::emu
