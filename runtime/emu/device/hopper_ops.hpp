// Hopper's asynchronous machinery in the emulator (included by launch.cpp only), from the
// PTX ISA: mbarrier phases with arrival counts and transaction bytes, TMA tiled loads with
// out-of-bounds zero fill and swizzle, and wgmma over shared-memory matrix descriptors.
//
// Checks (with KILN_EMU_CHECK_RACE), per shared byte in HopperBlock::tag:
//  - a byte a TMA wrote may be read (by a thread or a wgmma) only by threads that have waited
//    for the mbarrier phase the copy completes;
//  - a byte written by ordinary stores may be read by a wgmma only if its writer executed
//    fence.proxy.async after the store (and, as for every shared read, a barrier separates
//    the writer from other readers);
//  - a wgmma accumulator is touched only after the wgmma_wait covering its last wgmma;
//  - the bytes a wgmma read are unchanged when a thread's wgmma_wait covers it
//    (hopper_wgmma.hpp: wgmma_retire).
#pragma once

#include "runtime/emu/device/report.hpp"
#include "runtime/emu/tensor_map.h"
#include "runtime/half.hpp"

#include <bit>
#include <cmath>

namespace kiln::emu {

namespace {

std::uint32_t arena_offset(const Block& b, const void* p) {
  return std::uint32_t(reinterpret_cast<const char*>(p) - b.arena);
}

// The slot of the mbarrier at arena offset off of block b (b: the caller's, or a peer CTA's).
int find_mbar_at(Block& b, std::uint32_t off, const char* what) {
  if (off >= kMaxShared || off % 8) fail("%s: not an 8-byte aligned shared-memory address", what);
  for (int i = 0; i < b.hop.nbars; ++i)
    if (b.hop.bars[i].offset == off) return i;
  if (&b != self()->block)
    fail("%s on %s of CTA %u of the cluster, which mbarrier_init has not initialised there (a "
         "cluster_sync after the initialisation orders it before its peers' use)",
         what, shared_place(b, off).c_str(), b.cluster_rank);
  fail("%s on %s, which mbarrier_init has not initialised in this block", what,
       shared_place(b, off).c_str());
}

int find_mbar(Block& b, const void* p, const char* what) {
  return find_mbar_at(b, arena_offset(b, p), what);
}

void complete_phase_if_done(Mbarrier& m) {
  if (m.pending == 0 && m.tx == 0) {
    ++m.phases;
    m.pending = m.count;
  }
}

bool phase_done(const Mbarrier& m, unsigned parity) { return (m.phases & 1u) != parity; }

std::uint32_t& observed(Block& b, int thread, int slot) {
  return b.hop.observed[std::size_t(thread) * kMaxMbarriers + std::size_t(slot)];
}

// The phases of barrier `slot` that thread t has seen complete (races checked), or all.
std::uint32_t seen(Block& b, int thread, int slot) {
  return b.hop.observed ? observed(b, thread, slot) : 0xffffffffu;
}

// A read by `reader` (or, for a wgmma, the least any thread of its warpgroup saw: `seen_by`)
// of byte i at arena offset off that a TMA wrote.
void check_async_byte(Block& b, std::size_t off, std::uint32_t tag, std::uint32_t have,
                      const char* who) {
  const int slot = int((tag >> 24) & 0x3f);
  const std::uint32_t phase = tag & 0xffffffu;
  if ((have & 0xffffffu) <= phase && have != 0xffffffffu)
    fail("%s %s, which a TMA copy completing phase %u of the mbarrier at %s wrote, before "
         "waiting for that phase (mbarrier_wait)",
         who, shared_place(b, off).c_str(), phase,
         shared_place(b, b.hop.bars[slot].offset).c_str());
}

} // namespace

// ---- mbarrier -------------------------------------------------------------------------------
void mbar_init(void* p, unsigned count) {
  Block& b = block();
  const std::uint32_t off = arena_offset(b, p);
  if (off >= kMaxShared || off % 8) fail("mbarrier_init: not an 8-byte aligned shared address");
  if (count == 0 || count > (1u << 20) - 1)
    fail("mbarrier_init: count %u outside 1..2^20-1", count);
  int i = 0;
  while (i < b.hop.nbars && b.hop.bars[i].offset != off)
    ++i;
  if (i == b.hop.nbars) {
    if (b.hop.nbars == kMaxMbarriers) fail("more than %d mbarriers in one block", kMaxMbarriers);
    ++b.hop.nbars;
  }
  b.hop.bars[i] = Mbarrier{off, count, count, 0, 0};
  b.hop.remote_need[i] = 0;
  if (b.hop.observed)
    for (int t = 0; t < b.nthreads; ++t)
      observed(b, t, i) = 0;
  if (b.checks & kShadowChecks) shadow_write(p, 8);
}

// An arrival, after adding tx transaction bytes to the phase's expectation.
void mbar_arrive(void* p, long long tx) {
  Block& b = block();
  Mbarrier& m = b.hop.bars[find_mbar(b, p, "mbarrier_arrive")];
  if (m.pending == 0)
    fail("mbarrier_arrive: more arrivals than the barrier's count (%u) in one phase", m.count);
  m.tx += tx;
  --m.pending;
  Fiber& me = *self();
  const int slot = int(&m - b.hop.bars);
  me.hop.arrived_phase[slot] = m.phases;
  me.hop.arrived_fences[slot] = me.hop.proxy_fences;
  complete_phase_if_done(m);
  // A plain arrival (a consumer releasing a stage) lets the others run before this thread
  // goes on: one that releases a stage before its own wgmma_wait then finds the producer has
  // refilled it (wgmma_retire reports that). A producer's arrive.expect_tx does not yield,
  // so its copies follow at once.
  if (tx == 0) switch_to_scheduler(*self());
}

void mbar_wait(void* p, unsigned parity, Site where) {
  Fiber& f = *self();
  Block& b = *f.block;
  const int slot = find_mbar(b, p, "mbarrier_wait");
  if (!phase_done(b.hop.bars[slot], parity)) {
    f.wait = Wait::Mbarrier;
    f.site = where;
    f.param = slot;
    f.width = int(parity);
    switch_to_scheduler(f); // resumed by run_block once the phase completed
  }
  // The newest completed phase of this parity, and every one before it, has been seen.
  const Mbarrier& m = b.hop.bars[slot];
  const std::uint32_t last = (m.phases - 1) % 2 == parity ? m.phases : m.phases - 1;
  if (b.hop.observed && observed(b, f.linear, slot) < last) observed(b, f.linear, slot) = last;
  if (b.hop.remote_need[slot] && last >= b.hop.remote_need[slot]) b.hop.remote_need[slot] = 0;
}

// Whether fiber f, waiting at an mbarrier, may run again.
inline bool mbar_wait_over(Block& b, const Fiber& f) {
  return phase_done(b.hop.bars[f.param], unsigned(f.width));
}

// ---- TMA loads -------------------------------------------------------------------------------
// A map's element size and swizzle, checked, and the bytes of one row it lands (box[0] or
// im2col.channels elements: a multiple of 16 bytes, the swizzle span where it swizzles).
static std::size_t landed_row(const KilnTensorMap& m, unsigned row_elems) {
  const unsigned e = m.elem_bytes, W = m.swizzle;
  if (e != 1 && e != 2 && e != 4 && e != 8) fail("tensor map: element size %u", e);
  const std::size_t row = std::size_t(row_elems) * e;
  if (W != 0 && W != 32 && W != 64 && W != 128) fail("tensor map: swizzle %u", W);
  if (W ? row != W : row % 16)
    fail("tensor map: a box row of %zu bytes (emulated: a multiple of 16 without swizzle, "
         "the swizzle width with one)",
         row);
  return row;
}

// `total` elements of map m landing densely from arena offset d0 of block t (the issuer's, or
// a peer CTA's for a multicast), swizzled, element n read from src(n) (nullptr: out of
// bounds, a zero), completing their bytes on t's mbarrier at offset bar_off.
template <class Src>
void land(Block& t, std::uint32_t d0, const KilnTensorMap& m, std::uint32_t bar_off,
          std::size_t total, Src src, const char* what) {
  const unsigned e = m.elem_bytes, W = m.swizzle;
  const std::size_t align = W ? 8 * W : 128;
  if (d0 % align)
    fail("%s: shared destination at arena byte %u is not %zu-byte aligned", what, d0, align);
  const std::size_t bytes = total * e;
  if (d0 + bytes > kMaxShared || (d0 < t.dyn_bytes && d0 + bytes > t.dyn_bytes))
    fail("%s: %zu bytes at %s overrun its shared array", what, bytes, shared_place(t, d0).c_str());
  const int slot = find_mbar_at(t, bar_off, what);
  Mbarrier& mb = t.hop.bars[slot];
  const unsigned checks = self()->block->checks;
  const bool track = (checks & KILN_EMU_CHECK_RACE) && t.hop.tag;
  const std::uint32_t tag = kTagAsync | std::uint32_t(slot) << 24 | (mb.phases & 0xffffffu);
  for (std::size_t n = 0; n < total; ++n) {
    unsigned char v[8] = {};
    if (const char* from = src(n)) {
      if (checks & KILN_EMU_CHECK_BOUNDS) check_pointer(from, e, false, "TMA load");
      std::memcpy(v, from, e);
    }
    const std::size_t a = d0 + n * e; // dense position; the swizzle permutes 16-byte chunks
    const std::size_t phys = W ? a ^ (((a >> 7) & (W / 16 - 1)) << 4) : a;
    std::memcpy(t.arena + phys, v, e);
    if (checks & kShadowChecks)
      for (unsigned i = 0; i < e; ++i) {
        t.shadow[phys + i].wstamp = t.epoch;
        t.shadow[phys + i].writer = kAsyncWriter;
        if (track) t.hop.tag[phys + i] = tag;
      }
  }
  if (&t != self()->block) { // a peer's multicast: to be waited for before t exits
    t.hop.remote_need[slot] = mb.phases + 1;
    t.hop.remote_from[slot] = std::uint8_t(self()->block->cluster_rank);
    t.hop.remote_kind[slot] = 1;
  }
  mb.tx -= (long long)bytes; // complete_tx: the bytes have landed
  if (mb.pending == 0 && mb.tx < 0)
    fail("%s: %zu bytes complete on an mbarrier whose phase had all its arrivals and "
         "expected fewer bytes",
         what, bytes);
  complete_phase_if_done(mb);
}

// The box of tiled map m at coordinates c into block t (land).
void tma_into(Block& t, std::uint32_t d0, const void* map_p, std::uint32_t bar_off, const int* c,
              int rank, const char* what) {
  check_pointer(map_p, 8, false, "tma_load's tensor map");
  const KilnTensorMap& m = *static_cast<const KilnTensorMap*>(map_p);
  if (m.mode != KILN_TMA_TILED) fail("%s (tiled) on an im2col tensor map", what);
  if (int(m.rank) != rank)
    fail("%s with %d coordinates on a tensor map of rank %u", what, rank, m.rank);
  landed_row(m, m.box[0]);
  std::size_t total = 1;
  for (int d = 0; d < rank; ++d) {
    if (m.box[d] == 0 || m.box[d] > 256)
      fail("tensor map: box[%d] = %u outside 1..256", d, m.box[d]);
    total *= m.box[d];
  }
  int idx[KILN_TMA_MAX_RANK] = {};
  const char* g = static_cast<const char*>(m.global);
  // Elements in order, dimension 0 fastest: element n's coordinates are c + idx.
  land(
      t, d0, m, bar_off, total,
      [&](std::size_t) {
        bool in = true;
        long long goff = 0;
        for (int d = 0; d < rank; ++d) {
          const long long x = (long long)c[d] + idx[d];
          if (x < 0 || (unsigned long long)x >= m.dims[d]) in = false;
          goff += x * (long long)(d == 0 ? m.elem_bytes : m.strides[d]);
        }
        for (int d = 0; d < rank && ++idx[d] == int(m.box[d]); ++d)
          idx[d] = 0;
        return in ? g + goff : nullptr;
      },
      what);
}

// Im2col map m's pixels from position c (c, w, h[, d], n), read at the im2col offsets `off`
// (w, h[, d]), into block t: the PTX ISA's im2col mode (tensor_map.h). A first position
// outside the bounding box is an error (the hardware's behaviour there is not specified).
void tma_im2col_into(Block& t, std::uint32_t d0, const void* map_p, std::uint32_t bar_off,
                     const int* c, const unsigned* off, int rank, const char* what) {
  check_pointer(map_p, 8, false, "tma_load_im2col's tensor map");
  const KilnTensorMap& m = *static_cast<const KilnTensorMap*>(map_p);
  if (m.mode != KILN_TMA_IM2COL) fail("%s on a tiled tensor map", what);
  if (int(m.rank) != rank || rank < 4)
    fail("%s with %d coordinates on an im2col tensor map of rank %u (4 or 5)", what, rank, m.rank);
  const KilnIm2col& i2 = m.im2col;
  landed_row(m, i2.channels);
  if (i2.channels == 0 || i2.channels > 256 || i2.pixels == 0 || i2.pixels > 1024)
    fail("tensor map: %u channels x %u pixels (1..256 x 1..1024)", i2.channels, i2.pixels);
  const int S = rank - 2; // spatial dimensions 1..S: W, H[, D]
  long long pos[KILN_TMA_MAX_RANK], lo[3], hi[3];
  for (int d = 0; d < rank; ++d)
    pos[d] = c[d];
  for (int s = 0; s < S; ++s) {
    lo[s] = i2.lower[s];
    hi[s] = (long long)m.dims[1 + s] - 1 + i2.upper[s];
    if (pos[1 + s] < lo[s] || pos[1 + s] > hi[s])
      fail("%s: the first pixel's coordinate %lld in dimension %d lies outside the bounding "
           "box [%lld, %lld]",
           what, pos[1 + s], 1 + s, lo[s], hi[s]);
  }
  const char* g = static_cast<const char*>(m.global);
  const unsigned C = i2.channels;
  long long at[KILN_TMA_MAX_RANK]; // the pixel's read position but for the channel
  bool pixel_in = false;
  land(
      t, d0, m, bar_off, std::size_t(C) * i2.pixels,
      [&](std::size_t n) {
        const unsigned ch = unsigned(n % C);
        if (ch == 0) { // a new pixel: pos, moved along its traversal after the first
          if (n > 0) {
            int d = 1;
            for (; d <= S; ++d) {
              pos[d] += i2.element_strides[d];
              if (pos[d] <= hi[d - 1]) break;
              pos[d] = lo[d - 1];
            }
            if (d > S) pos[rank - 1] += i2.element_strides[rank - 1];
          }
          pixel_in = pos[rank - 1] >= 0 && (unsigned long long)pos[rank - 1] < m.dims[rank - 1];
          at[rank - 1] = pos[rank - 1];
          for (int s = 0; s < S; ++s) {
            at[1 + s] = pos[1 + s] + off[s];
            if (at[1 + s] < 0 || (unsigned long long)at[1 + s] >= m.dims[1 + s]) pixel_in = false;
          }
        }
        const long long x = (long long)c[0] + ch;
        if (!pixel_in || x < 0 || (unsigned long long)x >= m.dims[0]) return (const char*)nullptr;
        long long goff = x * (long long)m.elem_bytes;
        for (int d = 1; d < rank; ++d)
          goff += at[d] * (long long)m.strides[d];
        return g + goff;
      },
      what);
}

void tma_load_im2col(void* dst, const void* map_p, void* bar, const int* c, const unsigned* off,
                     int rank) {
  Block& b = *self()->block;
  tma_im2col_into(b, arena_offset(b, dst), map_p, arena_offset(b, bar), c, off, rank,
                  "tma_load_im2col");
}

void tma_load(void* dst, const void* map_p, void* bar, const int* c, int rank) {
  Block& b = *self()->block;
  tma_into(b, arena_offset(b, dst), map_p, arena_offset(b, bar), c, rank, "tma_load");
}

// ---- fences and accumulators
// ---------------------------------------------------------------------
void fence_proxy_async() { ++self()->hop.proxy_fences; }

void check_wgmma_acc(const void*, unsigned pending) {
  const Fiber& f = *self();
  if (pending - 1 >= f.hop.wg_done)
    fail("a wgmma accumulator is accessed before the wgmma_wait that covers its wgmma (group "
         "%u; %u committed, groups below %u waited for)",
         pending - 1, f.hop.wg_open, f.hop.wg_done);
}

// Called from shadow_read for a byte a TMA wrote (tag has kTagAsync).
void check_async_read(Block& b, const Fiber& f, std::size_t off) {
  const std::uint32_t tag = b.hop.tag[off];
  if (!(tag & kTagAsync)) return;
  check_async_byte(b, off, tag, seen(b, f.linear, int((tag >> 24) & 0x3f)), "this thread reads");
}

} // namespace kiln::emu

#include "runtime/emu/device/hopper_wgmma.hpp"
