// The checking aids (included by launch.cpp only): bounds reports for global and shared
// accesses, the shared-memory shadow (reads of bytes no thread of the block wrote; races
// between barriers; cp.async copies read before their wait), and static shared arrays.
//
// Race rule, per byte: a read by thread t of a byte written in the current barrier epoch by
// another thread, or a write by t of a byte another thread read or wrote in the current
// epoch, unless that thread is a lane of t's warp and a __syncwarp() both passed lies between
// (sync_warp). Atomics conflict with plain accesses of other threads, not with each other.
#pragma once

#include "runtime/emu/device/report.hpp"

namespace kiln::emu {

[[noreturn]] void fail(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  const std::string what = format(fmt, ap);
  va_end(ap);
  Fiber& f = *self();
  record(*f.block, &f, what);
  abort_block(f);
}

[[noreturn]] void global_fault(uptr addr, std::size_t size, std::size_t align, uptr lo, uptr hi,
                               int arg, const char* what) {
  const Block& b = block();
  const long long off = (long long)(addr - lo);
  const std::size_t bytes = hi - lo;
  const char* name = arg_name(b, arg);
  const std::string buffer =
      format("argument %d%s%s%s (%zu bytes = %zu elements of %zu bytes)", arg, *name ? " '" : "",
             name, *name ? "'" : "", bytes, bytes / size, size);
  if (addr >= lo && addr + size <= hi)
    fail("misaligned global %s: %zu bytes at byte offset %lld of %s need %zu-byte alignment",
         what ? what : "access", size, off, buffer.c_str(), align);
  fail("out-of-bounds global %s at element %lld (byte offset %lld) of %s", what ? what : "access",
       off >= 0 ? off / (long long)size : -1 - (-off - 1) / (long long)size, off, buffer.c_str());
}

[[noreturn]] void shared_fault(uptr addr, std::size_t size, std::size_t align, uptr lo, uptr hi,
                               const SharedSite* site) {
  const long long off = (long long)(addr - lo);
  const std::size_t bytes = hi - lo;
  const std::string array = site ? format("shared array '%s' (%s:%d; %zu elements of %zu bytes)",
                                          site->name, site->file, site->line, bytes / size, size)
                                 : format("dynamic shared memory (%zu bytes)", bytes);
  if (addr >= lo && addr + size <= hi)
    fail("misaligned shared access: %zu bytes at byte offset %lld of %s need %zu-byte alignment",
         size, off, array.c_str(), align);
  fail("out-of-bounds shared access at element %lld (byte offset %lld) of %s",
       off >= 0 ? off / (long long)size : -1 - (-off - 1) / (long long)size, off, array.c_str());
}

void* shared_alloc(const SharedSite* site, std::size_t bytes) {
  Block& b = block();
  for (int i = 0; i < b.nsites; ++i)
    if (b.site_key[i] == site) return b.arena + b.site_offset[i];
  if (bytes == 0)
    fail("shared array '%s' (%s:%d) has no elements", site->name, site->file, site->line);
  if (b.nsites == kMaxSharedSites)
    fail("more than %d shared arrays in one kernel", kMaxSharedSites);
  const std::size_t off = (b.static_top + 15) & ~std::size_t(15);
  if (off > kMaxShared || kMaxShared - off < bytes)
    fail("shared array '%s' (%s:%d, %zu bytes) does not fit: the block's shared memory would "
         "exceed %zu bytes",
         site->name, site->file, site->line, bytes, kMaxShared);
  b.site_key[b.nsites] = site;
  b.site_offset[b.nsites] = off;
  b.site_bytes[b.nsites] = bytes;
  ++b.nsites;
  b.static_top = off + bytes;
  return b.arena + off;
}

// ---- shadow ------------------------------------------------------------------------------------
// A read of a byte a TMA wrote (hopper_ops.hpp).
void check_async_read(Block& b, const Fiber& f, std::size_t off);

namespace {

// The per-access helpers are forced inline: called per byte of every shared access, they
// were a quarter of an emulated direct conv's time as calls.
struct Access {
  Fiber& f;
  Block& b;
  std::size_t off; // arena offset of the first byte
  Shadow* s;
  u16 me;
};

[[gnu::always_inline]] inline Access access(const void* p, std::size_t n) {
  Fiber& f = *self();
  Block& b = *f.block;
  const std::size_t off = std::size_t(uptr(p) - uptr(b.arena));
  if (off >= kMaxShared || kMaxShared - off < n)
    fail("shared-memory access outside the block's shared memory");
  return Access{f, b, off, b.shadow + off, u16(f.linear)};
}

std::string who(const Block& b, u16 id) {
  if (id == kAtomicWriter) return "atomics";
  if (id == kManyReaders) return "other threads";
  if ((id & kWarpReaders) == kWarpReaders)
    return "lanes of warp " + std::to_string(id & ~kWarpReaders);
  return "thread " + thread_name(b, id & ~kPendingCopy);
}

[[noreturn]] void race(const Access& a, std::size_t i, const char* mine, const char* theirs,
                       u16 other) {
  fail("shared-memory race at %s: this thread %s it, %s %s it since the last __syncthreads",
       shared_place(a.b, a.off + i).c_str(), mine, who(a.b, other).c_str(), theirs);
}

[[noreturn]] void pending(const Access& a, std::size_t i, const char* mine) {
  fail("%s %s while a cp.async of %s into it is still in flight (no cp_async_wait covers it)", mine,
       shared_place(a.b, a.off + i).c_str(), who(a.b, a.s[i].writer).c_str());
}

// Whether thread `other`'s access to byte i, stamped with its warp_syncs in `stamps`, is
// ordered before this thread's by a __syncwarp(): a lane of this warp, and this thread has
// passed a __syncwarp() since (the collective waits for every lane, the other among them).
// The warp of a shadow writer or reader: a thread's, or kWarpReaders | w's; -1 for atomics,
// the async proxy, many readers and a copy in flight.
[[gnu::always_inline]] inline int warp_of(u16 id) {
  if (id != kManyReaders && (id & kWarpReaders) == kWarpReaders) return id & ~kWarpReaders;
  return id < kAtomicWriter ? id / 32 : -1;
}
[[gnu::always_inline]] inline bool warp_synced(const Access& a, std::size_t i, u16 other,
                                               const u32* stamps) {
  return a.b.warp_stamp && warp_of(other) == a.me / 32 && a.f.warp_syncs > stamps[a.off + i];
}
[[gnu::always_inline]] inline bool write_synced(const Access& a, std::size_t i, u16 other) {
  return warp_synced(a, i, other, a.b.warp_stamp);
}
[[gnu::always_inline]] inline bool read_synced(const Access& a, std::size_t i, u16 other) {
  return warp_synced(a, i, other, a.b.warp_stamp ? a.b.warp_stamp + kMaxShared : nullptr);
}

// Conflicts of a write (plain, atomic or async) with earlier accesses of this epoch.
void check_write(const Access& a, std::size_t i, bool atomic) {
  const Shadow& e = a.s[i];
  const u32 epoch = a.b.epoch;
  if (e.writer == kAsyncWriter) return; // the async proxy's writes are ordered by mbarriers
  if (e.wstamp >= a.b.block_epoch) {
    if (e.writer & kPendingCopy) pending(a, i, "this thread writes");
    if (e.wstamp == epoch && e.writer != a.me && !(atomic && e.writer == kAtomicWriter) &&
        !write_synced(a, i, e.writer))
      race(a, i, "writes", "wrote", e.writer);
  }
  if (e.rstamp == epoch && e.reader != a.me && !read_synced(a, i, e.reader))
    race(a, i, "writes", "read", e.reader);
}

} // namespace

void shadow_read(const void* p, std::size_t n) {
  const Access a = access(p, n);
  const unsigned checks = a.b.checks;
  const u32 epoch = a.b.epoch, block_epoch = a.b.block_epoch;
  for (std::size_t i = 0; i < n; ++i) {
    Shadow& e = a.s[i];
    // Most reads: a byte written before the last __syncthreads (an ordinary store, landed) that
    // other threads read since: no check can fail and the shadow stays as it is (a tile of
    // weights or activations every warp reads; ~60% of an emulated direct conv's time went
    // through the general path below).
    if (e.rstamp == epoch && e.reader == kManyReaders && e.wstamp >= block_epoch &&
        e.wstamp != epoch && e.writer < kAsyncWriter)
      continue;
    if (e.wstamp < a.b.block_epoch) {
      if (checks & KILN_EMU_CHECK_SHARED_INIT)
        fail("read of %s, which no thread of this block has written",
             shared_place(a.b, a.off + i).c_str());
    } else if (checks & KILN_EMU_CHECK_RACE) {
      if (e.writer == kAsyncWriter) {
        check_async_read(a.b, a.f, a.off + i);
      } else {
        if (e.writer & kPendingCopy) pending(a, i, "this thread reads");
        if (e.wstamp == a.b.epoch && e.writer != a.me && !write_synced(a, i, e.writer))
          race(a, i, "reads", "wrote", e.writer);
      }
    }
    if (checks & KILN_EMU_CHECK_RACE) {
      // A reader since a __syncwarp() of its warp counts as the only one, lanes of one warp
      // as that warp (rstamp their latest count): kManyReaders would forbid every later
      // write of the epoch.
      u32* rsync = a.b.warp_stamp ? a.b.warp_stamp + kMaxShared + a.off + i : nullptr;
      const u16 mine = u16(kWarpReaders | (a.me / 32));
      if (e.rstamp != a.b.epoch || e.reader == a.me || read_synced(a, i, e.reader)) {
        e.rstamp = a.b.epoch;
        e.reader = a.me;
        if (rsync) *rsync = a.f.warp_syncs;
      } else if (rsync && warp_of(e.reader) == a.me / 32) {
        e.reader = mine;
        *rsync = std::max(*rsync, a.f.warp_syncs);
      } else {
        e.reader = kManyReaders;
      }
    }
  }
}

void shadow_write(const void* p, std::size_t n) {
  const Access a = access(p, n);
  for (std::size_t i = 0; i < n; ++i) {
    if (a.b.checks & KILN_EMU_CHECK_RACE) check_write(a, i, false);
    a.s[i].wstamp = a.b.epoch;
    a.s[i].writer = a.me;
    if (a.b.warp_stamp) a.b.warp_stamp[a.off + i] = a.f.warp_syncs;
    if (a.b.hop.tag) a.b.hop.tag[a.off + i] = a.f.hop.proxy_fences + 1; // generic proxy
  }
}

void shadow_atomic(const void* p, std::size_t n) {
  const Access a = access(p, n);
  for (std::size_t i = 0; i < n; ++i) {
    if (a.s[i].wstamp < a.b.block_epoch && (a.b.checks & KILN_EMU_CHECK_SHARED_INIT))
      fail("atomicAdd on %s, which no thread of this block has written",
           shared_place(a.b, a.off + i).c_str());
    if (a.b.checks & KILN_EMU_CHECK_RACE) check_write(a, i, true);
    a.s[i].wstamp = a.b.epoch;
    a.s[i].writer = kAtomicWriter;
  }
}

void shadow_copy_async(const void* p) {
  const Access a = access(p, 16);
  const bool track = a.b.checks & KILN_EMU_CHECK_RACE;
  for (std::size_t i = 0; i < 16; ++i) {
    if (track) check_write(a, i, false);
    a.s[i].wstamp = a.b.epoch;
    a.s[i].writer = u16(a.me | (track ? kPendingCopy : 0));
    if (a.b.hop.tag) a.b.hop.tag[a.off + i] = a.f.hop.proxy_fences + 1;
  }
  if (!track) return;
  if (a.f.npending == kMaxPendingCopies)
    fail("more than %d cp.async copies in flight in one thread", kMaxPendingCopies);
  a.f.pending[a.f.npending++] = PendingCopy{u32(a.off), a.f.open_group};
}

void async_commit() { ++self()->open_group; }

// Completes the copies of every committed group but the newest n.
void async_wait(int n) {
  Fiber& f = *self();
  Block& b = *f.block;
  int kept = 0;
  for (int i = 0; i < f.npending; ++i) {
    const PendingCopy c = f.pending[i];
    if (u64(c.group) + u64(n) >= f.open_group) {
      f.pending[kept++] = c;
      continue;
    }
    for (u32 j = 0; j < 16; ++j) {
      Shadow& e = b.shadow[c.offset + j];
      if (e.writer == u16(f.linear | kPendingCopy)) {
        e.writer = u16(f.linear);
        // Landed now: other lanes see it after a __syncwarp() that follows this wait.
        if (b.warp_stamp) b.warp_stamp[c.offset + j] = f.warp_syncs;
      }
    }
  }
  f.npending = kept;
}

void check_pointer(const void* p, std::size_t size, bool rmw, const char* what) {
  const Block& b = block();
  const uptr a = uptr(p), arena = uptr(b.arena);
  if (a - arena < kMaxShared) { // shared memory
    if (!rmw)
      fail("%s of a shared-memory address (%s)", what,
           shared_place(b, std::size_t(a - arena)).c_str());
    if ((b.checks & KILN_EMU_CHECK_BOUNDS) && a + size > arena + b.static_top)
      fail("out-of-bounds %s at %s", what, shared_place(b, std::size_t(a - arena)).c_str());
    if (b.checks & kShadowChecks) shadow_atomic(p, size);
    return;
  }
  if (!(b.checks & KILN_EMU_CHECK_BOUNDS)) return;
  for (int i = 0; i < KILN_EMU_MAX_ARGS; ++i) {
    const uptr lo = uptr(b.launch->args[i]), hi = lo + b.launch->arg_bytes[i];
    if (a >= lo && a < hi) {
      if (hi - a < size || a % size != 0) global_fault(a, size, size, lo, hi, i, what);
      return;
    }
  }
  fail("%s of address %p, which lies in no kernel argument and not in shared memory", what, p);
}

} // namespace kiln::emu
