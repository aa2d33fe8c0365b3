// Reports of the emulator (included by launch.cpp only): the launch-wide state that keeps
// the first report, and the wording of thread, shared-memory and wait descriptions. Of
// several failing blocks the lowest-numbered one is reported, so the report does not
// depend on how many workers ran.
#pragma once

#include "runtime/emu/device/fiber.hpp"
#include "runtime/emu/device/state.hpp"
#include "common/kiln.cuh"

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>

#pragma GCC visibility push(hidden)

namespace kiln::emu {

struct LaunchState {
  const KilnEmuLaunch* launch = nullptr;
  void (*entry)(kiln::KernelArgs) = nullptr;
  kiln::KernelArgs args{};
  u64 total_blocks = 0;
  int nthreads = 0;
  // Clusters: CTAs per cluster along x, y, z ({1,1,1} without a cluster launch), their
  // product, and the number of clusters in the grid (the work units).
  unsigned cluster_dim[3] = {1, 1, 1};
  int cluster_size = 1;
  u64 total_clusters = 0;
  alignas(64) std::atomic<u64> next{0}; // its own cache line: workers take clusters from it
  alignas(64) std::atomic<bool> stop{false};
  std::mutex mu;
  bool failed = false;
  u64 failed_block = 0; // Block::order of the failing block
  std::string report;
};

inline std::string format(const char* fmt, va_list ap) {
  char buf[1024];
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  return buf;
}
inline std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
inline std::string format(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::string s = format(fmt, ap);
  va_end(ap);
  return s;
}

inline std::string thread_name(const Block& b, int linear) {
  const unsigned x = b.block_dim.x, y = b.block_dim.y;
  return format("(%u,%u,%u)", unsigned(linear) % x, (unsigned(linear) / x) % y,
                unsigned(linear) / (x * y));
}

inline std::string site_name(const Site& s) { return format("%s:%u", s.file, s.line); }

// Records `what` for block b (and thread f when given), keeping the lowest block's report
// (in the order workers take blocks: by cluster, then rank; the linear order without clusters).
inline void record(Block& b, const Fiber* f, const std::string& what) {
  const KilnEmuLaunch& L = *b.launch;
  std::string s = format("kernel '%s': block (%u,%u,%u)", L.kernel_name ? L.kernel_name : "?",
                         b.block_idx.x, b.block_idx.y, b.block_idx.z);
  if (f) s += ", thread " + thread_name(b, f->linear);
  s += ": " + what;
  LaunchState& st = *b.run;
  std::lock_guard<std::mutex> lock(st.mu);
  if (!st.failed || b.order < st.failed_block) {
    st.failed = true;
    st.failed_block = b.order;
    st.report = std::move(s);
  }
  st.stop.store(true, std::memory_order_relaxed);
}

// Ends the calling fiber's block: its fibers are abandoned, the worker takes no new block.
[[noreturn]] inline void abort_block(Fiber& f) {
  f.block->aborted = true;
  switch_to_scheduler(f);
  __builtin_trap(); // the scheduler never resumes an aborted block
}

inline const char* arg_name(const Block& b, int arg) {
  const char* n = arg >= 0 && arg < KILN_EMU_MAX_ARGS ? b.launch->arg_names[arg] : nullptr;
  return n ? n : "";
}

// "shared array 'tile' (k.cpp:12), byte 40" or "dynamic shared memory, byte 40".
inline std::string shared_place(const Block& b, std::size_t offset) {
  if (offset < b.dyn_bytes) return format("dynamic shared memory, byte %zu", offset);
  for (int i = 0; i < b.nsites; ++i)
    if (offset >= b.site_offset[i] && offset < b.site_offset[i] + b.site_bytes[i])
      return format("shared array '%s' (%s:%d), byte %zu", b.site_key[i]->name, b.site_key[i]->file,
                    b.site_key[i]->line, offset - b.site_offset[i]);
  return format("shared memory outside every array, arena byte %zu", offset);
}

inline const char* op_name(WarpOp op) {
  switch (op) {
  case WarpOp::ShflIdx: return "__shfl_sync";
  case WarpOp::ShflXor: return "__shfl_xor_sync";
  case WarpOp::ShflDown: return "__shfl_down_sync";
  case WarpOp::Ballot: return "__ballot_sync";
  case WarpOp::LdmatrixRows: return "ldmatrix";
  case WarpOp::MmaF16: return "mma.sync.m16n8k16.f16";
  case WarpOp::MmaBf16: return "mma.sync.m16n8k16.bf16";
  case WarpOp::MmaTf32: return "mma.sync.m16n8k8.tf32";
  case WarpOp::Wgmma: return "wgmma.mma_async";
  case WarpOp::SetMaxNreg: return "setmaxnreg";
  }
  return "?";
}

inline bool same_site(const Site& a, const Site& b) {
  return a.line == b.line && (a.file == b.file || std::strcmp(a.file, b.file) == 0);
}

inline std::string wait_name(const Fiber& f) {
  switch (f.wait) {
  case Wait::None: return "runnable";
  case Wait::Done: return "exited";
  case Wait::Barrier: return "wait at __syncthreads " + site_name(f.site);
  case Wait::Cluster: return "wait at cluster_sync " + site_name(f.site);
  case Wait::Warp: return std::string("wait at ") + op_name(f.op) + " " + site_name(f.site);
  case Wait::Warpgroup:
    return std::string("wait at warpgroup ") + op_name(f.op) + " " + site_name(f.site);
  case Wait::Mbarrier:
    return format("wait at mbarrier %d (parity %d) %s", f.param, f.width,
                  site_name(f.site).c_str());
  }
  return "?";
}

// Where the threads of lanes [first, last) are: "threads 0-15 wait at ...; threads 16-31 ...".
inline std::string describe_waits(const Block& b, int first, int last) {
  std::string s;
  for (int i = first; i < last;) {
    const std::string w = wait_name(fiber_at(b, i));
    int j = i + 1;
    while (j < last && wait_name(fiber_at(b, j)) == w)
      ++j;
    if (!s.empty()) s += "; ";
    s += j - i == 1 ? format("thread %d", i) : format("threads %d-%d", i, j - 1);
    s += " " + w;
    i = j;
  }
  return s + " (linear thread ids)";
}

// The waits of every thread of b's cluster, CTA by CTA (those of b alone without a cluster).
inline std::string describe_cluster_waits(const Block& b) {
  const Cluster& c = *b.cluster;
  if (c.size == 1) return describe_waits(b, 0, b.nthreads);
  std::string s;
  for (int r = 0; r < c.size; ++r) {
    const Block& x = *c.cta[r];
    s += format("%sCTA %d of the cluster, block (%u,%u,%u): ", r ? "; " : "", r, x.block_idx.x,
                x.block_idx.y, x.block_idx.z) +
         describe_waits(x, 0, x.nthreads);
  }
  return s;
}

} // namespace kiln::emu

#pragma GCC visibility pop
