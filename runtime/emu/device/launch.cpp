// The exported launcher of an emulated kernel library (ABI: runtime/emu/launch_abi.h), and
// the one translation unit of the emulator's machinery: compile it into every library of
// kernels built by the host compiler. Clusters of blocks (single blocks without a cluster
// launch) are handed out in order to `workers` OS threads (the caller is the first); each
// worker keeps its fiber stacks, shared-memory arenas and shadows across launches.

// System headers first: kiln.cuh turns `asm` into an error for the code that follows it.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <sys/mman.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include "common/kiln.cuh"

#include "runtime/emu/device/fiber.hpp"
#include "runtime/emu/device/report.hpp"
#include "runtime/emu/device/scheduler.hpp"
#include "runtime/emu/launch_abi.h"

namespace kiln::emu {
namespace {

static_assert(sizeof(KilnEmuArgs) == sizeof(kiln::KernelArgs), "KilnEmuArgs must match");

// What a worker keeps between launches for each CTA of a cluster (one without clusters).
struct CtaMemory {
  char* arena = nullptr;                 // kMaxShared bytes
  Shadow* shadow = nullptr;              // one entry per arena byte, allocated when a launch checks
  std::vector<PendingCopy> pending;      // cp.async tracking, allocated when a launch checks races
  std::vector<std::uint32_t> tag;        // async-proxy tracking (hopper_state.hpp), likewise
  std::vector<std::uint32_t> observed;   // mbarrier phases each thread saw complete, likewise
  std::vector<std::uint32_t> warp_stamp; // Block::warp_stamp, likewise
  std::size_t poisoned = 0;              // arena bytes used since the last poisoning
  u32 epoch = 0;
  Block block{};

  CtaMemory() {
    arena = static_cast<char*>(std::aligned_alloc(64, kMaxShared));
    if (!arena) throw std::bad_alloc();
    std::memset(arena, 0xff, kMaxShared); // NaN in every float format, -1 in integers
  }
  ~CtaMemory() {
    std::free(arena);
    std::free(shadow);
  }
  CtaMemory(const CtaMemory&) = delete;
  CtaMemory& operator=(const CtaMemory&) = delete;
  void prepare(bool shadowed, bool races) {
    if (races && pending.empty()) pending.resize(std::size_t(kMaxThreads) * kMaxPendingCopies);
    if (races && warp_stamp.empty()) warp_stamp.resize(2 * kMaxShared);
    if (races && tag.empty()) {
      tag.resize(kMaxShared);
      observed.resize(std::size_t(kMaxThreads) * kMaxMbarriers);
    }
    if (shadowed && !shadow) {
      shadow = static_cast<Shadow*>(std::calloc(kMaxShared, sizeof(Shadow)));
      if (!shadow) throw std::bad_alloc();
      epoch = 1;
    }
    if (shadow && epoch > 0xf0000000u) { // stamps would wrap: start over
      std::memset(shadow, 0, kMaxShared * sizeof(Shadow));
      epoch = 1;
    }
  }
};

// What a worker keeps between launches: fiber stacks for every thread of a cluster, and
// each CTA's memory (allocated for as many CTAs as a launch's clusters have).
struct Worker {
  FiberStacks stacks;
  std::unique_ptr<CtaMemory> cta[kMaxClusterCtas];
  Cluster cluster{};

  Worker() { cta[0] = std::make_unique<CtaMemory>(); }
  void prepare(int nthreads, int cluster_size, bool shadowed, bool races) {
    stacks.reserve(nthreads * cluster_size);
    for (int r = 0; r < cluster_size; ++r) {
      if (!cta[r]) cta[r] = std::make_unique<CtaMemory>();
      cta[r]->prepare(shadowed, races);
    }
  }
};

std::mutex pool_mu;
std::vector<std::unique_ptr<Worker>> pool;

std::unique_ptr<Worker> acquire_worker() {
  {
    std::lock_guard<std::mutex> lock(pool_mu);
    if (!pool.empty()) {
      std::unique_ptr<Worker> w = std::move(pool.back());
      pool.pop_back();
      return w;
    }
  }
  return std::make_unique<Worker>();
}

void release_worker(std::unique_ptr<Worker> w) {
  std::lock_guard<std::mutex> lock(pool_mu);
  pool.push_back(std::move(w));
}

void run_worker(LaunchState& st, Worker& w) {
  const KilnEmuLaunch& L = *st.launch;
  const bool races = (L.checks & KILN_EMU_CHECK_RACE) != 0;
  Cluster& c = w.cluster;
  c.size = st.cluster_size;
  for (int r = 0; r < c.size; ++r) {
    CtaMemory& m = *w.cta[r];
    Block& b = m.block;
    b.grid_dim = dim3(L.grid[0], L.grid[1], L.grid[2]);
    b.block_dim = dim3(L.block[0], L.block[1], L.block[2]);
    b.checks = L.checks;
    b.launch = &L;
    b.run = &st;
    b.cluster = &c;
    b.cluster_rank = u32(r);
    b.arena = m.arena;
    b.shadow = m.shadow;
    b.pending = m.pending.data();
    b.warp_stamp = m.warp_stamp.empty() || !races ? nullptr : m.warp_stamp.data();
    b.hop.tag = m.tag.empty() || !races ? nullptr : m.tag.data();
    b.hop.observed = b.hop.tag ? m.observed.data() : nullptr;
    b.dyn_bytes = L.dynamic_smem;
    b.slots = w.stacks.base() + std::size_t(r) * std::size_t(st.nthreads) * kSlotBytes;
    b.nthreads = st.nthreads;
    b.epoch = m.epoch;
    c.cta[r] = &b;
  }
  while (!st.stop.load(std::memory_order_relaxed)) {
    // A cluster taken is always run, so every cluster below a failing one runs: the lowest
    // failing block (the one reported) does not depend on the number of workers.
    const u64 cl = st.next.fetch_add(1, std::memory_order_relaxed);
    if (cl >= st.total_clusters) break;
    for (int r = 0; r < c.size; ++r)
      std::memset(w.cta[r]->arena, 0xff, std::max(w.cta[r]->poisoned, L.dynamic_smem));
    const bool ok = run_cluster(c, st, cl);
    for (int r = 0; r < c.size; ++r)
      w.cta[r]->poisoned = std::max(w.cta[r]->poisoned, w.cta[r]->block.static_top);
    if (!ok) break;
  }
  for (int r = 0; r < c.size; ++r)
    w.cta[r]->epoch = w.cta[r]->block.epoch;
}

std::string validate(const KilnEmuLaunch& L) {
  if (!L.entry) return "no kernel entry";
  for (int i = 0; i < 3; ++i)
    if (L.grid[i] == 0 || L.block[i] == 0) return "a zero grid or block dimension";
  if (L.block[0] > 1024 || L.block[1] > 1024 || L.block[2] > 64 ||
      u64(L.block[0]) * L.block[1] * L.block[2] > u64(kMaxThreads))
    return format("block (%u,%u,%u) exceeds CUDA's limits (1024 threads; z <= 64)", L.block[0],
                  L.block[1], L.block[2]);
  if (L.grid[0] > 0x7fffffffu || L.grid[1] > 65535u || L.grid[2] > 65535u)
    return format("grid (%u,%u,%u) exceeds CUDA's limits", L.grid[0], L.grid[1], L.grid[2]);
  if (L.dynamic_smem > kMaxShared)
    return format("%zu bytes of dynamic shared memory exceed the %zu a block can have",
                  L.dynamic_smem, kMaxShared);
  if (L.checks & ~KILN_EMU_CHECK_ALL) return format("unknown check bits 0x%x", L.checks);
  const unsigned* c = L.cluster;
  if (c[0] == 0 && c[1] == 0 && c[2] == 0) return {}; // no cluster: as {1,1,1}
  if (c[0] == 0 || c[1] == 0 || c[2] == 0)
    return format("cluster (%u,%u,%u): a zero dimension (all three zero, or all 1: no cluster)",
                  c[0], c[1], c[2]);
  if (u64(c[0]) * c[1] * c[2] > u64(kMaxClusterCtas))
    return format("cluster (%u,%u,%u) has more than %d blocks (CUDA: "
                  "cudaErrorClusterOutOfResources)",
                  c[0], c[1], c[2], kMaxClusterCtas);
  for (int i = 0; i < 3; ++i)
    if (L.grid[i] % c[i])
      return format("grid (%u,%u,%u) is not a multiple of the cluster (%u,%u,%u) in each "
                    "dimension (CUDA: cudaErrorInvalidClusterSize)",
                    L.grid[0], L.grid[1], L.grid[2], c[0], c[1], c[2]);
  return {};
}

void write_error(char* error, std::size_t len, const std::string& s) {
  if (!error || len == 0) return;
  const std::size_t n = std::min(len - 1, s.size());
  std::memcpy(error, s.data(), n);
  error[n] = '\0';
}

int launch(const KilnEmuLaunch& L, char* error, std::size_t error_len) {
  if (std::string bad = validate(L); !bad.empty()) {
    write_error(error, error_len,
                format("kernel '%s': invalid launch: ", L.kernel_name ? L.kernel_name : "?") + bad);
    return KILN_EMU_INVALID;
  }
  LaunchState st;
  st.launch = &L;
  // The entry really is a void(kiln::KernelArgs); the C header only carries it (via void()).
  st.entry = reinterpret_cast<void (*)(kiln::KernelArgs)>(reinterpret_cast<void (*)()>(L.entry));
  std::memcpy(st.args.p, L.args, sizeof st.args.p);
  st.total_blocks = u64(L.grid[0]) * L.grid[1] * L.grid[2];
  st.nthreads = int(L.block[0] * L.block[1] * L.block[2]);
  if (L.cluster[0] | L.cluster[1] | L.cluster[2])
    for (int i = 0; i < 3; ++i)
      st.cluster_dim[i] = L.cluster[i];
  st.cluster_size = int(st.cluster_dim[0] * st.cluster_dim[1] * st.cluster_dim[2]);
  st.total_clusters = st.total_blocks / u64(st.cluster_size);

  u64 nworkers = L.workers ? L.workers : std::max(1u, std::thread::hardware_concurrency());
  nworkers = std::min<u64>({nworkers, st.total_clusters, 256});
  std::vector<std::unique_ptr<Worker>> workers;
  struct Release { // workers go back to the pool on every path
    std::vector<std::unique_ptr<Worker>>& w;
    ~Release() {
      for (auto& x : w)
        if (x) release_worker(std::move(x));
    }
  } release{workers};
  for (u64 i = 0; i < nworkers; ++i) {
    workers.push_back(acquire_worker());
    workers.back()->prepare(st.nthreads, st.cluster_size, (L.checks & kShadowChecks) != 0,
                            (L.checks & KILN_EMU_CHECK_RACE) != 0);
  }

  std::vector<std::thread> threads;
  std::mutex error_mu;
  std::string thread_error;
  auto body = [&](Worker& w) {
    try {
      run_worker(st, w);
    } catch (const std::exception& e) {
      std::lock_guard<std::mutex> lock(error_mu);
      thread_error = e.what();
      st.stop = true;
    }
  };
  try {
    for (u64 i = 1; i < nworkers; ++i)
      threads.emplace_back(body, std::ref(*workers[i]));
  } catch (const std::exception& e) {
    st.stop = true;
    thread_error = e.what();
  }
  body(*workers[0]);
  for (auto& t : threads)
    t.join();

  if (st.failed) {
    write_error(error, error_len, st.report);
    return KILN_EMU_REPORT;
  }
  if (!thread_error.empty()) {
    write_error(error, error_len, "emulator: " + thread_error);
    return KILN_EMU_INVALID;
  }
  return KILN_EMU_OK;
}

} // namespace
} // namespace kiln::emu

extern "C" __attribute__((visibility("default"))) unsigned kiln_emu_abi_version(void) {
  return KILN_EMU_ABI_VERSION;
}

extern "C" __attribute__((visibility("default"))) int
kiln_emu_launch(const KilnEmuLaunch* launch, char* error, size_t error_len) {
  if (!launch) {
    kiln::emu::write_error(error, error_len, "no launch description");
    return KILN_EMU_INVALID;
  }
  try {
    return kiln::emu::launch(*launch, error, error_len);
  } catch (const std::exception& e) {
    kiln::emu::write_error(error, error_len, std::string("emulator: ") + e.what());
    return KILN_EMU_INVALID;
  }
}
