#include "generator/cli/sweep_run.hpp"

#include "generator/cli/format.hpp"
#include "generator/cli/sweep_report.hpp"
#include "generator/compile/cache.hpp"
#include "generator/compile/compile_dir.hpp"
#include "generator/emit/generate.hpp"
#include "generator/gpu/detect.hpp"
#include "generator/model/model_json.hpp"
#include "generator/tune/device_timing.hpp"
#include "generator/tune/layer_spec.hpp"
#include "generator/tune/sweep_csv.hpp"
#include "runtime/cuda/backend.hpp"
#include "runtime/cuda/cudnn_runner.hpp"
#include "runtime/cuda/device.hpp"
#include "runtime/emu/backend.hpp"
#include "runtime/error.hpp"
#include "runtime/io/file.hpp"

#include <chrono>
#include <filesystem>
#include <fmt/format.h>

namespace kiln::cli {

const char* const kSweepTargetHelp =
    "a model (file or shipped name) or one layer: conv:c=128,h=28,w=28,k=128,r=3,s=1,p=1 "
    "(keys n c h w k r s p d g bias relu), linear:c=2048,k=1000 (n c k bias relu), "
    "pool:c=64,h=56,w=56,r=3,s=2,p=1,mode=max (n c h w r s p mode); unknown keys are errors";

void SweepArgs::add_to(CLI::App* cmd, bool required) {
  auto* target = cmd->add_option("MODEL", model.model, kSweepTargetHelp);
  if (required) target->required();
  cmd->add_option("--batch", model.batch, "override the batch size (a layer spec's n)");
  cmd->add_option("--image", model.image, "override the input image size, HxW");
  cmd->add_option("--dtype", model.dtype, "element type: f32, f16 or bf16")
      ->check(CLI::IsMember({"f32", "f16", "bf16"}));
  cmd->add_option("--gpu", gpu,
                  "auto (default: describe the live GPU) or a descriptor: a kiln-gpu/1 file or a "
                  "shipped name (h100, a100, ...); --device emu needs a descriptor");
  cmd->add_option("--device", device,
                  "gpu (default: check, then time with CUDA events) or emu (check every variant "
                  "on the CPU emulator; times nothing)")
      ->check(CLI::IsMember({"gpu", "emu"}));
  auto* o = cmd->add_option("-o,--output", output,
                            std::string("directory for generated/, sweep.csv and report.html") +
                                (required ? "" : " (default: one in the cache directory)"));
  if (required) o->required();
  cmd->add_option("--variants", variants,
                  "all (default): every valid variant of each layer; default: the cost model's "
                  "pick only (against cuDNN)")
      ->check(CLI::IsMember({"all", "default"}));
  cmd->add_option("--shard", shard,
                  "I/N: only this shard's work items — the (layer shape, variant) pairs sorted "
                  "by shape key then variant name, item j to shard j mod N");
  cmd->add_option("--runs", runs, "timed runs per variant (median; at least 20)")
      ->check(CLI::Range(20, 100000));
  cmd->add_option("--warmup", warmup, "untimed runs before timing");
  cmd->add_option("--seed", seed, "seed of the check's random inputs");
}

namespace {

// One line on stderr while the sweep runs (a terminal only): a bar, the count, the item.
class SweepProgress {
public:
  SweepProgress() : active_(stderr_is_terminal()) {}
  void operator()(size_t done, size_t total, const WorkItem& w) {
    if (!active_) return;
    const auto now = std::chrono::steady_clock::now();
    if (done < total && now - last_ < std::chrono::milliseconds(100)) return;
    last_ = now;
    const int width = 24, filled = total ? int(width * done / total) : width;
    fmt::print(stderr, "\r\033[K[{}{}] {}/{} {} {}", std::string(size_t(filled), '#'),
               std::string(size_t(width - filled), '.'), done, total,
               w.layers.empty() ? "" : w.layers.front(), w.variant.name);
    if (done == total) fmt::print(stderr, "\r\033[K");
  }

private:
  bool active_;
  std::chrono::steady_clock::time_point last_{};
};

Model sweep_model(const SweepArgs& a) {
  if (!is_layer_spec(a.model.model)) return a.model.load();
  Model m = layer_spec_model(a.model.model);
  apply_overrides(m, a.model.overrides());
  return m;
}

GpuDesc sweep_gpu(const SweepArgs& a) {
  if (a.gpu != "auto") return load_gpu(a.gpu);
  try {
    return detect_gpu();
  } catch (const Error& e) {
    throw Error("", "--gpu auto",
                cat(e.message(), a.device == "emu"
                                     ? "; to sweep on the emulator name a descriptor (--gpu h100)"
                                     : ""));
  }
}

} // namespace

SweepResult run_sweep_command(const SweepArgs& a, const std::string& command) {
  if (a.warmup < 0) throw Error("", "--warmup", "must be 0 or more");
  const Shard shard = a.shard.empty() ? Shard{} : parse_shard(a.shard);
  // Without a driver, say so before anything else (exit 2), never crash.
  if (a.device == "gpu") require_device("", 0);
  const Model m = sweep_model(a);
  SweepResult r;
  r.gpu = sweep_gpu(a);
  r.device = a.device;
  r.dir = a.output.empty() ? KernelCache::default_dir() + "/sweeps/" +
                                 cache_key({model_to_text(m), r.gpu.identity(), KILN_VERSION})
                           : a.output;
  if (a.device == "emu")
    fmt::print(stderr,
               "kiln: note: --device emu checks every variant against the CPU reference on the "
               "emulator; no timing there is meaningful, so it times nothing (the CSV's timing "
               "columns are empty)\n");
  GenerateOptions go;
  go.all_variants = a.variants == "all";
  go.tuning_db = "none"; // measure what the cost model weighs, not an earlier measurement
  go.sparse = SparseMode::off;
  const Generated gen = generate(m, r.gpu, go);
  const std::string gdir = r.dir + "/generated";
  write_generated(gen, gdir);
  CompileOptions co;
  co.compiler = a.device == "emu" ? "host" : "nvrtc";
  co.progress = stderr_is_terminal();
  compile_dir(gdir, co);
  r.items = sweep_work(gen.plan, gen.layout, r.gpu, go.all_variants);
  if (r.items.empty())
    throw Error(m.file, "",
                cat(command, ": no conv, linear or pooling layer with a generated "
                             "kernel to sweep"));
  SweepDevice dev;
  dev.name = a.device;
  if (a.device == "emu") {
    const std::string lib = emu_library_path(gdir);
    dev.check = [lib] { return std::make_unique<EmuBackend>(lib, EmuOptions{}); };
  } else {
    dev.check = [gdir]() -> std::unique_ptr<Backend> {
      auto cuda = std::make_unique<CudaBackend>(gdir, CudaOptions{0, false});
      cuda->set_library(make_cudnn_runner());
      return cuda;
    };
    TimingOptions to;
    to.runs = a.runs;
    to.warmup = a.warmup;
    to.l2_bytes = r.gpu.l2_bytes;
    dev.time = [gdir, to](const Plan& single) {
      CudaBackend cuda(gdir, CudaOptions{0, false}); // one launch per timed run: no graphs
      cuda.set_library(make_cudnn_runner());
      return time_rotated(single, cuda, to);
    };
  }
  SweepProgress progress;
  r.rows = run_sweep(gen.plan, r.items, shard_items(r.items.size(), shard), dev, a.seed,
                     [&](size_t d, size_t t, const WorkItem& w) { progress(d, t, w); });
  for (const SweepRow& row : r.rows)
    r.failed += !row.check.pass;
  io::write_file_atomic(r.dir + "/sweep.csv",
                        sweep_csv(r.gpu.identity(), a.device, r.items, r.rows));
  io::write_file_atomic(
      r.dir + "/report.html",
      sweep_report_html(fmt::format("kiln {} {} on {} ({})", command, m.name, r.gpu.name, a.device),
                        a.device, r.items, r.rows));
  return r;
}

} // namespace kiln::cli
