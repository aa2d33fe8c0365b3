// kiln check: every generated kernel against the CPU reference, on the emulator or a GPU.
#include "generator/check/kernel_check.hpp"
#include "generator/cli/commands.hpp"
#include "generator/cli/sweep_args.hpp"
#include "generator/compile/device_backend.hpp"
#include "runtime/cuda/device.hpp"
#include "runtime/error.hpp"
#include "runtime/progress.hpp"

#include <fmt/format.h>

namespace kiln::cli {

namespace {

struct CheckArgs {
  std::string dir;
  std::string device = "emu";
  uint64_t seed = 1;
  bool alternatives = false;
  bool no_checks = false;
  unsigned workers = 0;
  int64_t images = CheckOptions{}.images;
};

void check_cmd(const CheckArgs& a) {
  if (a.device == "gpu") require_device("", 0); // say it once, plainly, when there is no GPU
  DeviceBackendOptions o;
  o.progress = ProgressLine::stderr_is_terminal();
  o.emu.checks = a.no_checks ? 0 : KILN_EMU_CHECK_ALL;
  o.emu.workers = a.workers;
  o.cuda.graphs = false; // one launch per check
  const BackendFactory factory = compiled_backends(a.dir, a.device, o);
  ProgressLine line;
  const auto rows =
      check_kernels(a.dir, factory, a.seed, a.alternatives, CheckOptions{.images = a.images},
                    [&](size_t i, size_t n, const std::string& k) {
                      line.draw([&] { return fmt::format("check {}/{} {}", i + 1, n, k); });
                    });
  line.clear();
  size_t w = 6;
  for (const KernelCheck& r : rows)
    w = std::max(w, r.kernel.size());
  fmt::print("{:<{}}  {:>12}  {:>12}  {:>9}  {}\n", "kernel", w, "max abs err", "rel err",
             "tolerance", "verdict");
  int failed = 0;
  for (const KernelCheck& r : rows) {
    failed += !r.pass;
    // A sampled check says so: the reference computed those images only.
    const std::string images = r.images ? fmt::format(" ({} of {} images)", r.images, r.batch) : "";
    fmt::print("{:<{}}  {:>12.3g}  {:>12.3g}  {:>9.0e}  {}{}\n", r.kernel, w, r.max_abs, r.rel,
               r.tolerance,
               r.pass ? "pass" : "FAIL" + (r.error.empty() ? std::string() : ": " + r.error),
               images);
  }
  fmt::print("{} kernels on {}: {} passed, {} failed\n", rows.size(), a.device,
             rows.size() - failed, failed);
  if (failed)
    throw CheckFailed(
        fmt::format("{} of {} kernels differ from the reference", failed, rows.size()));
}

} // namespace

void add_check(CLI::App& app) {
  auto a = std::make_shared<CheckArgs>();
  CLI::App* cmd = app.add_subcommand(
      "check", "run every kernel of a generated directory on fresh random inputs and compare it "
               "with the CPU reference (f64) within its declared tolerance; exit 1 on any failure");
  cmd->add_option("DIR", a->dir, "directory written by kiln generate")->required();
  cmd->add_option("--device", a->device, "emu (the kernels on the CPU emulator) or gpu")
      ->check(CLI::IsMember({"emu", "gpu"}));
  cmd->add_option("--seed", a->seed, "seed of the random inputs");
  cmd->add_flag("--alternatives", a->alternatives, "also check the alternatives of --variants all");
  cmd->add_flag("--no-checks", a->no_checks,
                "emu: skip the bounds, shared-memory and race checks (faster)");
  cmd->add_option("--check-images", a->images, kCheckImagesHelp)->check(CLI::NonNegativeNumber);
  cmd->add_option("--workers", a->workers,
                  "emu: threads running blocks (default: hardware threads)");
  cmd->callback([a] { check_cmd(*a); });
}

} // namespace kiln::cli
