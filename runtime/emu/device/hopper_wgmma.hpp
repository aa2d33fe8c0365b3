// Warpgroup collectives in the emulator (included by hopper_ops.hpp): wgmma.mma_async and
// setmaxnreg complete when the 128 threads of a warpgroup (4 consecutive warps, the first a
// multiple of 4) have arrived. wgmma's operands are read from shared memory through the
// matrix descriptors as the PTX ISA lays them out (K-major canonical layouts, swizzle none,
// 32, 64 or 128 bytes; MN-major ones, imm-trans 1, for f16 / bf16 in the swizzled modes);
// products are exact in float and accumulated in k order.
#pragma once

namespace kiln::emu {

namespace {

struct Desc {
  std::uint32_t start, lbo, sbo;
  unsigned swizzle; // bytes, 0 for none
};

Desc decode(u64 d) {
  static constexpr unsigned kMode[4] = {0, 128, 64, 32};
  if ((d >> 49) & 7) fail("wgmma descriptor with a matrix base offset: not emulated");
  return Desc{std::uint32_t(d & 0x3fff) << 4, std::uint32_t((d >> 16) & 0x3fff) << 4,
              std::uint32_t((d >> 32) & 0x3fff) << 4, kMode[(d >> 62) & 3]};
}

// Arena offset of byte kb (< 32: one k step) of row r of a K-major operand.
std::size_t operand_byte(const Desc& d, int r, unsigned kb) {
  if (!d.swizzle)
    return d.start + std::size_t(r / 8) * d.sbo + std::size_t(r % 8) * 16 + (kb / 16) * d.lbo +
           kb % 16;
  const std::size_t a = d.start + std::size_t(r / 8) * d.sbo + std::size_t(r % 8) * d.swizzle + kb;
  return a ^ (((a >> 7) & (d.swizzle / 16 - 1)) << 4);
}

// The operand kind a wgmma's in[5] carries: the type (0 f16, 1 bf16, 2 tf32) in bits 0-3,
// imm-trans-a in bit 4 and imm-trans-b in bit 5 (MN-major A / B).
constexpr int kTransA = 16, kTransB = 32;

// Arena offset of element (mn, k) (k < one k step) of an operand of `es`-byte elements:
// K-major as operand_byte; MN-major (PTX ISA, "shared memory matrix layout", imm-trans 1)
// in swizzle atoms of `swizzle` bytes along MN by 8 k, the next atom along MN LBO bytes on,
// the next 8 k SBO bytes on, the chunk XOR as in K-major atoms.
std::size_t element_at(const Desc& d, bool mn_major, int mn, int k, unsigned es) {
  if (!mn_major) return operand_byte(d, mn, unsigned(k) * es);
  const unsigned per = d.swizzle / es; // elements along MN in an atom's row
  const std::size_t a = d.start + std::size_t(unsigned(mn) / per) * d.lbo +
                        std::size_t(k / 8) * d.sbo + std::size_t(k % 8) * d.swizzle +
                        std::size_t(unsigned(mn) % per) * es;
  return a ^ (((a >> 7) & (d.swizzle / 16 - 1)) << 4);
}

// The least number of phases of barrier `slot` any thread of warpgroup g saw complete.
std::uint32_t group_seen(Block& b, int g, int slot) {
  std::uint32_t least = 0xffffffffu;
  for (int t = g * kWarpgroup; t < (g + 1) * kWarpgroup; ++t)
    least = std::min(least, seen(b, t, slot));
  return least;
}

// Warpgroup g as one wgmma sees it: group_seen of every barrier, taken once at its issue
// (nothing else runs while a wgmma reads its operands) rather than per operand byte.
struct GroupView {
  Block& b;
  int g;
  std::uint32_t least[kMaxMbarriers];
  GroupView(Block& blk, int grp) : b(blk), g(grp) {
    for (int slot = 0; slot < kMaxMbarriers; ++slot) // no TMA tags a byte with a later slot
      least[slot] = slot < b.hop.nbars ? group_seen(b, g, slot) : 0;
  }
};

// Whether thread w's ordinary store (its tag: proxy_fences + 1 at the store) is ordered
// before warpgroup g's reads by an mbarrier: w fenced after the store, then arrived in a
// phase that every thread of g has seen complete. Only w's last arrival per barrier is kept,
// so an older release may be missed (a false report, never a missed race).
bool released_to(const GroupView& v, int w, std::uint32_t tag) {
  const HopperFiber& h = fiber_at(v.b, w).hop;
  for (int slot = 0; slot < v.b.hop.nbars; ++slot)
    if (h.arrived_fences[slot] >= tag && v.least[slot] > h.arrived_phase[slot]) return true;
  return false;
}

// Reads `bytes` operand bytes at off for warpgroup g: the async-proxy checks, then the value.
void read_operand(const GroupView& v, std::size_t off, unsigned bytes, void* out) {
  Block& b = v.b;
  const int g = v.g;
  if (off + bytes > kMaxShared) fail("wgmma operand outside shared memory (arena byte %zu)", off);
  if ((b.checks & KILN_EMU_CHECK_SHARED_INIT) || (b.checks & KILN_EMU_CHECK_RACE))
    for (unsigned i = 0; i < bytes; ++i) {
      const Shadow& e = b.shadow[off + i];
      if (e.wstamp < b.block_epoch) {
        if (b.checks & KILN_EMU_CHECK_SHARED_INIT)
          fail("wgmma reads %s, which no thread of this block has written",
               shared_place(b, off + i).c_str());
        continue;
      }
      if (!(b.checks & KILN_EMU_CHECK_RACE) || !b.hop.tag) continue;
      const std::uint32_t tag = b.hop.tag[off + i];
      if (e.writer == kAsyncWriter) {
        check_async_byte(b, off + i, tag, v.least[(tag >> 24) & 0x3f],
                         "a wgmma of this warpgroup reads");
        continue;
      }
      const u16 w = u16(e.writer & ~kPendingCopy);
      if (w >= b.nthreads) continue; // atomics
      if (e.writer & kPendingCopy)
        fail("a wgmma reads %s while a cp.async into it is in flight",
             shared_place(b, off + i).c_str());
      if (tag == 0 || fiber_at(b, w).hop.proxy_fences < tag)
        fail("a wgmma (the async proxy) reads %s, written by ordinary stores of thread %s with no "
             "fence.proxy.async (fence_proxy_async) between the store and the wgmma",
             shared_place(b, off + i).c_str(), thread_name(b, w).c_str());
      if (e.wstamp == b.epoch && w / kWarpgroup != g && !released_to(v, w, tag))
        fail("shared-memory race at %s: a wgmma reads it, thread %s wrote it since the last "
             "__syncthreads",
             shared_place(b, off + i).c_str(), thread_name(b, w).c_str());
    }
  std::memcpy(out, b.arena + off, bytes);
}

float operand_value(const GroupView& v, const Desc& d, bool mn_major, int r, int k, int kind) {
  if (kind == 2) { // tf32: the sign, exponent and top 10 mantissa bits of a float
    std::uint32_t x;
    read_operand(v, element_at(d, mn_major, r, k, 4), 4, &x);
    return std::bit_cast<float>(x & 0xffffe000u);
  }
  std::uint16_t h;
  read_operand(v, element_at(d, mn_major, r, k, 2), 2, &h);
  return kind == 0 ? half_bits_to_float(h) : bf16_bits_to_float(h);
}

// A fingerprint of the bytes a wgmma reads (values, and with race checks their writers and
// tags): equal at issue and at the wait when nothing rewrote them in between.
std::uint64_t fingerprint(const Block& b, const Desc& da, const Desc& db, int n, int kind) {
  const unsigned e = (kind & 15) == 2 ? 4 : 2; // one k step: 16 x 2 or 8 x 4 bytes
  const int K = int(32 / e);
  std::uint64_t h = 1469598103934665603ull;
  auto mix = [&h](std::uint64_t v) { h = (h ^ v) * 1099511628211ull; };
  auto operand = [&](const Desc& d, bool mn_major, int rows) {
    for (int r = 0; r < rows; ++r)
      for (int k = 0; k < K; ++k)
        for (unsigned i = 0; i < e; ++i) {
          const std::size_t off = element_at(d, mn_major, r, k, e) + i;
          mix(std::uint8_t(b.arena[off]));
          if (b.hop.tag) mix(std::uint64_t(b.hop.tag[off]) << 16 | b.shadow[off].writer);
        }
  };
  operand(da, kind & kTransA, 64);
  operand(db, kind & kTransB, n);
  return h;
}

void check_desc(const Desc& d, const char* which, bool mn_major) {
  if (mn_major && !d.swizzle)
    fail("wgmma %s descriptor: an MN-major operand without swizzle (its interleaved layout): "
         "not emulated",
         which);
  if (d.swizzle && d.start % (8 * d.swizzle) >= d.swizzle)
    fail("wgmma %s descriptor: start at arena byte %u is not within the first row of a %u-byte "
         "swizzle atom (%u-byte aligned): not emulated",
         which, d.start, d.swizzle, 8 * d.swizzle);
}

void complete_wgmma(Block& b, int g, Fiber* const* t) {
  const Fiber& f0 = *t[0];
  const int N = f0.param, flags = int(f0.in[5]), kind = flags & 15, K = kind == 2 ? 8 : 16;
  const bool ta = flags & kTransA, tb = flags & kTransB;
  if ((ta || tb) && kind == 2)
    fail("wgmma with a transposed (MN-major) tf32 operand: the PTX ISA allows imm-trans only "
         "for f16 and bf16");
  for (int i = 1; i < kWarpgroup; ++i)
    if (t[i]->param != N || t[i]->in[0] != f0.in[0] || t[i]->in[1] != f0.in[1] ||
        t[i]->in[2] != f0.in[2] || t[i]->in[3] != f0.in[3] || t[i]->in[4] != f0.in[4] ||
        t[i]->in[5] != f0.in[5])
      fail("the threads of warpgroup %d issue different wgmma operations (shape, type, "
           "descriptors or scale-d differ between threads %d and %d)",
           g, t[0]->linear, t[i]->linear);
  const Desc da = decode(u64(f0.in[0]) | u64(f0.in[1]) << 32);
  const Desc db = decode(u64(f0.in[2]) | u64(f0.in[3]) << 32);
  check_desc(da, "A", ta);
  check_desc(db, "B", tb);
  static thread_local float A[64][16], B[256][16];
  const GroupView view(b, g);
  for (int m = 0; m < 64; ++m)
    for (int k = 0; k < K; ++k)
      A[m][k] = operand_value(view, da, ta, m, k, kind);
  for (int n = 0; n < N; ++n)
    for (int k = 0; k < K; ++k)
      B[n][k] = operand_value(view, db, tb, n, k, kind);
  const bool acc = f0.in[4] != 0;
  if (b.hop.ninflight[g] == kMaxInflight)
    fail("more than %d wgmma operations of warpgroup %d in flight (no wgmma_wait)", kMaxInflight,
         g);
  const u64 ua = u64(f0.in[0]) | u64(f0.in[1]) << 32, ub = u64(f0.in[2]) | u64(f0.in[3]) << 32;
  b.hop.inflight[g][b.hop.ninflight[g]++] =
      InflightWgmma{ua, ub, fingerprint(b, da, db, N, flags), f0.hop.wg_open, N, flags, 0};
  for (int i = 0; i < kWarpgroup; ++i) {
    float* d = reinterpret_cast<float*>(t[i]->value);
    const int w = i / 32, l = i % 32, gr = l / 4, tq = l % 4;
    for (int j = 0; j < N / 8; ++j)
      for (int h = 0; h < 2; ++h)
        for (int e = 0; e < 2; ++e) {
          const int m = 16 * w + 8 * h + gr, n = 8 * j + 2 * tq + e;
          float s = acc ? d[4 * j + 2 * h + e] : 0.0f;
          for (int k = 0; k < K; ++k)
            s = std::fma(A[m][k], B[n][k], s);
          d[4 * j + 2 * h + e] = s;
        }
  }
}

} // namespace

// After a wgmma_wait of f completing groups [done_before, wg_done): the warpgroup's wgmma
// operations in them must have read until now the bytes they read at issue. Compared once,
// at the last of the 128 threads' waits (then the operation is forgotten): a rewrite before
// any thread's wait is one before the last (its writer and tag differ even where the value
// does not), and the hash of a 64 x 256 operand pair is ~10K bytes, once a thread was 40% of
// a Hopper kernel's emulation.
void wgmma_retire(Fiber& f, unsigned done_before) {
  Block& b = *f.block;
  const int g = f.linear / kWarpgroup;
  int kept = 0;
  for (int i = 0; i < b.hop.ninflight[g]; ++i) {
    InflightWgmma& op = b.hop.inflight[g][i];
    if (op.group < done_before || op.group >= f.hop.wg_done) {
      b.hop.inflight[g][kept++] = op;
      continue;
    }
    if (++op.waited < kWarpgroup) {
      b.hop.inflight[g][kept++] = op;
      continue;
    }
    if (fingerprint(b, decode(op.da), decode(op.db), op.n, op.kind) != op.fingerprint)
      fail("shared memory a wgmma of group %u reads (A at arena byte %u, B at %u) was "
           "rewritten before the wgmma_wait covering it: a stage released to its producer "
           "before its wgmma operations completed",
           op.group, decode(op.da).start, decode(op.db).start);
  }
  b.hop.ninflight[g] = kept;
}

// Arrives at a warpgroup collective; it completes when all 128 threads of the warpgroup have.
void warpgroup_collective(Fiber& f, WarpOp op, Site where) {
  Block& b = *f.block;
  const int g = f.linear / kWarpgroup;
  if ((g + 1) * kWarpgroup > b.nthreads)
    fail("%s needs a full warpgroup of 128 threads; the block has %d", op_name(op), b.nthreads);
  f.op = op;
  f.site = where;
  f.wait = Wait::Warpgroup;
  if (++b.hop.wg_arrived[g] == kWarpgroup) {
    Fiber* t[kWarpgroup];
    for (int i = 0; i < kWarpgroup; ++i) {
      t[i] = &fiber_at(b, g * kWarpgroup + i);
      if (t[i]->op != op || !same_site(t[i]->site, where))
        fail("the threads of warpgroup %d are at different warpgroup operations: %s", g,
             describe_waits(b, g * kWarpgroup, (g + 1) * kWarpgroup).c_str());
    }
    if (op == WarpOp::Wgmma) {
      complete_wgmma(b, g, t);
    } else {
      for (int i = 1; i < kWarpgroup; ++i)
        if (t[i]->param != t[0]->param || t[i]->width != t[0]->width)
          fail("setmaxnreg: the threads of warpgroup %d ask for different register counts", g);
      for (int i = 0; i < kWarpgroup; ++i)
        t[i]->hop.maxnreg = std::uint32_t(t[0]->param);
    }
    for (int i = 0; i < kWarpgroup; ++i)
      t[i]->wait = Wait::None;
    b.hop.wg_arrived[g] = 0;
  }
  switch_to_scheduler(f);
}

} // namespace kiln::emu
