#include "generator/compile/compile_dir.hpp"
#include "generator/compile/host_pch.hpp"

#include "generator/compile/cache.hpp"
#include "generator/compile/nvrtc.hpp"
#include "generator/compile/process.hpp"
#include "generator/compile/sass_census.hpp"
#include "generator/compile/source_excerpt.hpp"
#include "generator/compile/templates.hpp"
#include "runtime/error.hpp"
#include "runtime/io/file.hpp"
#include "runtime/io/file_lock.hpp"
#include "runtime/json_util.hpp"
#include "runtime/progress.hpp"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <mutex>
#include <optional>
#include <thread>
#include <unistd.h>

namespace kiln {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

std::string emu_library_path(const std::string& dir) { return dir + "/emu/kernels.so"; }

namespace {

struct Job {
  std::string name, entry, source_path, source;
  std::string arch; // the directory's, or the kernel's own (sm_90a)
  bool no_spills = true;
  int registers_assumed = 0; // the cost model's estimate (0: the manifest has none)
  // results
  bool ok = false, from_cache = false;
  Resources res;
  std::string log, error;
  std::vector<std::string> problems; // corrupt cache entries met (and rebuilt), census failures
  std::optional<SassCensus> census;
};

// The census of a compiled kernel's cubin, where asked for and a disassembler is present;
// a disassembler failing on one cubin is a warning (the census is a diagnosis, the cubin
// is sound: an H100's CUDA 13.0 cuobjdump failed on one of 119 resnet50 variants).
void take_census(const std::string& dir, Job& j) {
  try {
    j.census = sass_census(dir + "/kernels/" + j.name + ".cubin");
  } catch (const std::exception& e) {
    j.problems.push_back(cat("no SASS census of ", j.name, ": ", e.what()));
  }
}

std::string read_text(const std::string& path) {
  const auto b = io::read_file(path);
  return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

const char* kNvrtcOptions = "-std=c++17 --ptxas-options=-v -default-device --extra-device-vectorization";

// Runs `work(i)` for i in [0, n) on `jobs` threads; `tick` after each.
template <class F, class G> void parallel_for(size_t n, int jobs, F work, G tick) {
  std::atomic<size_t> next{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < std::max(1, jobs); ++t)
    pool.emplace_back([&] {
      for (size_t i; (i = next++) < n;) {
        work(i);
        tick(i);
      }
    });
  for (std::thread& t : pool) t.join();
}

// A cache hit for `key`, or nothing with `held` taking the key's lock first: of several
// processes (or threads) missing one key, the first compiles it while the others wait for
// the lock and then find its entry.
std::optional<CacheEntry> lookup(const KernelCache& cache, const std::string& key,
                                 std::optional<io::FileLock>& held, Job& j) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    std::string problem;
    std::optional<CacheEntry> e = cache.get(key, &problem);
    if (!problem.empty()) j.problems.push_back(problem);
    if (e) {
      held.reset();
      return e;
    }
    if (!held) held.emplace(cache.lock(key));
  }
  return std::nullopt;
}

// A fresh directory for one compile's objects: two processes compiling the same generated
// directory (shards of one sweep, runs of one model) never link or delete each other's.
std::string private_dir(const std::string& parent) {
  std::string d = parent + "/objects-XXXXXX";
  if (!mkdtemp(d.data()))
    throw Error(parent, "", cat("cannot create a directory: ", strerror(errno)));
  return d;
}

std::string host_compiler() {
  const char* cxx = std::getenv("CXX");
  return cxx && *cxx ? cxx : "c++";
}

std::string nvcc_path() {
  const char* home = std::getenv("CUDA_HOME");
  const std::string p = std::string(home && *home ? home : "/usr/local/cuda") + "/bin/nvcc";
  return fs::exists(p) ? p : "nvcc";
}

} // namespace

CompileSummary compile_dir(const std::string& dir, const CompileOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::string manifest_path = dir + "/manifest.json";
  const std::string text = read_text(manifest_path);
  nlohmann::json man = json_util::parse(text, manifest_path);
  namespace ju = json_util;
  ju::expect_object(man, "");
  const std::string arch = o.arch.empty()
                               ? ju::get_string(ju::require(ju::require(man, "gpu", ""), "arch", "/gpu"), "/gpu/arch")
                               : o.arch;
  const std::string identity =
      ju::get_string(ju::require(ju::require(man, "gpu", ""), "identity", "/gpu"), "/gpu/identity");
  const nlohmann::json& ks = ju::require(man, "kernels", "");
  ju::expect_array(ks, "/kernels");
  std::vector<Job> jobs;
  CompileSummary sum;
  for (size_t i = 0; i < ks.size(); ++i) {
    const std::string ptr = ju::child("/kernels", i);
    Job j;
    j.name = ju::get_string(ju::require(ks[i], "name", ptr), ptr + "/name");
    j.entry = ju::get_string(ju::require(ks[i], "entry", ptr), ptr + "/entry");
    const std::string src = ju::get_string(ju::require(ks[i], "source", ptr), ptr + "/source");
    if (src.find("..") != std::string::npos || src.empty() || src[0] == '/')
      throw Error(manifest_path, ptr + "/source", "must be a path inside the directory");
    j.source_path = dir + "/" + src;
    j.source = read_text(j.source_path);
    const std::string want = ju::get_string(ju::require(ks[i], "source_hash", ptr), ptr + "/source_hash");
    if (want != content_hash(j.source))
      sum.warnings.push_back(cat(src, " was edited after kiln generate (its hash differs from the manifest's)"));
    if (ks[i].contains("promises_no_spills")) j.no_spills = ks[i]["promises_no_spills"].get<bool>();
    // Only a kernel compiled for the occupancy it was priced at (min_blocks_per_sm > 1)
    // holds its family to a register table; the others' estimates are rough by design.
    if (ks[i].contains("registers_assumed") && ks[i].value("min_blocks_per_sm", 1) > 1)
      j.registers_assumed = ju::get_int(ks[i]["registers_assumed"], ptr + "/registers_assumed");
    // A kernel of an architecture-specific feature set (sm_90a: wgmma, setmaxnreg) names it.
    j.arch = arch;
    if (ks[i].contains("arch")) {
      j.arch = ju::get_string(ks[i]["arch"], ptr + "/arch");
      if (j.arch != arch + "a" && j.arch != arch)
        throw Error(manifest_path, ptr + "/arch",
                    cat("\"", j.arch, "\" is not the directory's ", arch, " or ", arch, "a"));
    }
    jobs.push_back(std::move(j));
  }
  sum.kernels = int(jobs.size());
  const KernelCache cache(o.cache_dir);
  const int threads = o.jobs > 0 ? o.jobs : int(std::max(1u, std::thread::hardware_concurrency()));
  std::atomic<int> done{0};
  ProgressLine progress(o.progress);
  auto tick = [&](size_t i) {
    const int d = ++done;
    progress.draw([&] { return fmt::format("compile {}/{} {}", d, jobs.size(), jobs[i].name); });
  };
  auto finish_progress = [&] { progress.clear(); };

  if (o.compiler == "nvrtc" || o.compiler == "nvcc") {
    const std::string version = o.compiler == "nvrtc" ? "nvrtc " + nvrtc_version() : tool_version(nvcc_path());
    if (version.empty()) throw Error("", "--compiler", cat("cannot run ", nvcc_path()));
    std::string include;
    if (o.compiler == "nvcc") include = write_template_tree(cache.dir() + "/include-" + templates_hash());
    // nvcc's form of an architecture: -arch=sm_80, or for sm_90a (the "a" is no integer)
    // -gencode=arch=compute_90a,code=sm_90a.
    const auto nvcc_arch = [](const std::string& a) {
      const std::string n = a.substr(3);
      return n.ends_with('a') ? "-gencode=arch=compute_" + n + ",code=sm_" + n : "-arch=sm_" + n;
    };
    parallel_for(jobs.size(), threads, [&](size_t i) {
      Job& j = jobs[i];
      const std::string key = cache_key({o.compiler, version, KILN_VERSION, templates_hash(),
                                         j.arch, identity, kNvrtcOptions, j.source});
      std::optional<io::FileLock> held;
      if (o.use_cache)
        if (auto e = lookup(cache, key, held, j)) {
          j.ok = j.from_cache = true;
          j.res = e->resources;
          j.log = e->log;
          io::write_file_atomic(dir + "/kernels/" + j.name + ".cubin", std::string(e->image.begin(), e->image.end()));
          if (o.sass) take_census(dir, j);
          return;
        }
      CompileOutput out;
      if (o.compiler == "nvrtc") {
        out = nvrtc_compile(j.source, "kernels/" + j.name + ".cu", j.entry, j.arch);
      } else {
        const std::string cubin = dir + "/kernels/" + j.name + ".cubin.tmp." + std::to_string(getpid());
        const ProcessResult r = run_process({nvcc_path(), "-cubin", nvcc_arch(j.arch), "-std=c++17",
                                             "-Xptxas", "-v", "--extra-device-vectorization", "-I",
                                             include, "-o", cubin, j.source_path});
        out.log = r.output;
        if (r.exit_code == 0) {
          const auto img = io::read_file(cubin);
          out.image.assign(reinterpret_cast<const char*>(img.data()), reinterpret_cast<const char*>(img.data()) + img.size());
          out.ok = true;
          out.resources = parse_ptxas_report(out.log, j.entry);
        }
        std::error_code ec;
        fs::remove(cubin, ec);
      }
      j.log = out.log;
      if (!out.ok) {
        j.error = fmt::format("kernel {}: {} failed for {}\n{}\n{}", j.name, o.compiler, j.arch,
                              out.log, source_excerpt(out.log, j.source_path, j.source));
        return;
      }
      j.ok = true;
      j.res = out.resources;
      if (o.use_cache) cache.put(key, {out.image, out.resources, out.log});
      io::write_file_atomic(dir + "/kernels/" + j.name + ".cubin", std::string(out.image.begin(), out.image.end()));
      if (o.sass) take_census(dir, j);
    }, tick);
    finish_progress();
    sum.output = dir + "/kernels/*.cubin";
    if (o.compiler == "nvcc" && std::all_of(jobs.begin(), jobs.end(), [](const Job& j) { return j.ok; })) {
      // One fatbin with every kernel: a translation unit including all instances.
      // One architecture for the fatbin: sm_90a code runs on sm_90 GPUs only, as sm_90 does.
      const bool any_a =
          std::any_of(jobs.begin(), jobs.end(), [](const Job& j) { return j.arch.ends_with('a'); });
      std::string all;
      for (const Job& j : jobs) all += "#include \"" + fs::absolute(j.source_path).string() + "\"\n";
      const std::string pid = std::to_string(getpid());
      const std::string tu = dir + "/kernels/all_kernels." + pid + ".cu";
      io::write_file_atomic(tu, all);
      const std::string fat = dir + "/kernels.fatbin";
      const ProcessResult r =
          run_process({nvcc_path(), "-fatbin", nvcc_arch(any_a ? arch + "a" : arch), "-std=c++17",
                       "-I", include, "-o", fat + ".tmp." + pid, tu});
      std::error_code ec;
      fs::remove(tu, ec);
      if (r.exit_code != 0) throw CompileFailed("fatbin: nvcc failed\n" + r.output);
      fs::rename(fat + ".tmp." + pid, fat);
      sum.output += ", " + fat;
    }
  } else if (o.compiler == "host") {
    const std::string cxx = host_compiler();
    const std::string version = tool_version(cxx);
    if (version.empty()) throw Error("", "--compiler", cat("cannot run the host compiler ", cxx, " (set CXX)"));
    const std::string include = write_template_tree(cache.dir() + "/include-" + templates_hash());
    std::vector<std::string> flags = {"-std=c++20", "-O2", "-fPIC", "-w", "-I", include};
#if defined(__x86_64__)
    // The emulated mma's std::fma as one instruction, not a call through the PLT into libm
    // (~9% of an emulated tensor-core kernel); same results (contraction stays off: only
    // std::fma fuses). Only where this machine has FMA; the flags are in the cache key.
    if (__builtin_cpu_supports("fma")) flags.insert(flags.end(), {"-mfma", "-ffp-contract=off"});
#endif
    fs::create_directories(dir + "/emu");
    const std::string objdir = private_dir(dir + "/emu");
    struct RemoveObjects {
      std::string d;
      ~RemoveObjects() {
        std::error_code ec;
        fs::remove_all(d, ec);
      }
    } remove_objects{objdir};
    // The launcher is one more translation unit of the library.
    Job launcher;
    launcher.name = "launch";
    launcher.source_path = include + "/runtime/emu/device/launch.cpp";
    launcher.source = read_text(launcher.source_path);
    jobs.push_back(launcher);
    std::vector<std::string> objects(jobs.size());
    // The templates precompiled once, on the first kernel the cache does not have (its
    // objects are byte-identical to a plain compile's, so the cache key leaves it out); the
    // launcher compiles without it.
    std::once_flag pch_once;
    std::optional<std::string> pch;
    parallel_for(jobs.size(), threads, [&](size_t i) {
      Job& j = jobs[i];
      std::string key_parts = version;
      for (const std::string& f : flags) key_parts += " " + f;
      const std::string key = cache_key({"host", key_parts, KILN_VERSION, templates_hash(), j.source});
      const std::string obj = objdir + "/" + j.name + ".o";
      objects[i] = obj;
      std::optional<io::FileLock> held;
      if (o.use_cache)
        if (auto e = lookup(cache, key, held, j)) {
          j.ok = j.from_cache = true;
          io::write_file_atomic(obj, std::string(e->image.begin(), e->image.end()));
          return;
        }
      std::vector<std::string> argv = {cxx, "-x", "c++"};
      argv.insert(argv.end(), flags.begin(), flags.end());
      if (j.name != launcher.name) {
        std::call_once(pch_once, [&] { pch = host_pch(cxx, version, flags, include); });
        if (pch) argv.insert(argv.end(), {"-include", *pch});
      }
      const std::string tmp = obj + ".tmp";
      argv.insert(argv.end(), {"-c", j.source_path, "-o", tmp});
      const ProcessResult r = run_process(argv);
      j.log = r.output;
      if (r.exit_code != 0) {
        j.error = fmt::format("kernel {}: host compile failed\n{}\n{}", j.name, r.output,
                              source_excerpt(r.output, j.source_path, j.source));
        return;
      }
      const auto img = io::read_file(tmp);
      std::vector<char> bytes(reinterpret_cast<const char*>(img.data()), reinterpret_cast<const char*>(img.data()) + img.size());
      fs::rename(tmp, obj);
      j.ok = true;
      if (o.use_cache) cache.put(key, {bytes, {}, r.output});
    }, tick);
    finish_progress();
    sum.warnings.insert(sum.warnings.end(), jobs.back().problems.begin(),
                        jobs.back().problems.end());
    jobs.pop_back(); // the launcher is not a kernel of the manifest
    if (std::all_of(jobs.begin(), jobs.end(), [](const Job& j) { return j.ok; }) && !objects.empty()) {
      const std::string so = emu_library_path(dir);
      const std::string tmp = so + ".tmp." + std::to_string(getpid());
      std::vector<std::string> argv = {cxx, "-shared", "-o", tmp};
      argv.insert(argv.end(), objects.begin(), objects.end());
      argv.push_back("-lpthread");
      const ProcessResult r = run_process(argv);
      if (r.exit_code != 0) throw CompileFailed("linking " + so + " failed\n" + r.output);
      // A process that loaded the previous library keeps its (unlinked) copy.
      fs::rename(tmp, so);
      sum.output = so;
    }
  } else {
    throw Error("", "--compiler", cat("unknown compiler \"", o.compiler, "\" (nvrtc, nvcc or host)"));
  }

  // Results into the manifest (device compilers only report resources).
  std::string failures;
  nlohmann::ordered_json updated = nlohmann::ordered_json::parse(text);
  for (size_t i = 0; i < jobs.size(); ++i) {
    const Job& j = jobs[i];
    sum.warnings.insert(sum.warnings.end(), j.problems.begin(), j.problems.end());
    if (!j.ok) {
      failures += j.error + "\n";
      continue;
    }
    j.from_cache ? ++sum.cached : ++sum.compiled;
    if (o.compiler == "host") continue;
    const bool spills = j.res.spill_stores > 0 || j.res.spill_loads > 0;
    if (spills && j.no_spills) {
      ++sum.spilling;
      sum.warnings.push_back(fmt::format("kernel {} spills ({} bytes stored, {} loaded) although its variant "
                                         "promises none", j.name, j.res.spill_stores, j.res.spill_loads));
    }
    // The occupancy the model priced is kept by __launch_bounds__ (KILN_KERNEL_OCC); more
    // registers than it assumed mean its register table is stale: say so.
    if (j.registers_assumed > 0 && j.res.registers > j.registers_assumed)
      sum.warnings.push_back(fmt::format("kernel {} uses {} registers, the cost model assumed {}",
                                         j.name, j.res.registers, j.registers_assumed));
    updated["kernels"][i]["compiled"] = {
        {"compiler", o.compiler}, {"arch", j.arch}, {"image", "kernels/" + j.name + ".cubin"},
        {"registers", j.res.registers}, {"spill_stores", j.res.spill_stores},
        {"spill_loads", j.res.spill_loads}, {"stack_bytes", j.res.stack_bytes},
        {"shared_bytes", j.res.shared_bytes}, {"spills", spills}};
    if (const auto& c = j.census)
      updated["kernels"][i]["compiled"]["sass"] = {{"mma", c->mma()},
                                                   {"mma_count", c->hgmma + c->hmma},
                                                   {"hgmma", c->hgmma},
                                                   {"hmma", c->hmma},
                                                   {"tma_loads", c->tma_loads},
                                                   {"tma_multicasts", c->tma_multicasts},
                                                   {"gpu_fences", c->gpu_fences},
                                                   {"local_loads", c->local_loads},
                                                   {"local_stores", c->local_stores},
                                                   {"instructions", c->instructions}};
  }
  if (!failures.empty()) throw CompileFailed(failures);
  if (o.compiler != "host") io::write_file_atomic(manifest_path, updated.dump(2) + "\n");
  sum.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return sum;
}

} // namespace kiln
