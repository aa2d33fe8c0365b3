// kiln bench: every valid variant of a model's (or one layer's) conv, linear and pooling
// steps, checked against the reference and timed beside cuDNN; a CSV and a report.
#include "generator/cli/commands.hpp"
#include "generator/cli/sweep_args.hpp"
#include "generator/tune/stop_signal.hpp"
#include "runtime/error.hpp"

#include <cstring>

#include <fmt/format.h>
#include <set>

namespace kiln::cli {

namespace {

void bench_cmd(const SweepArgs& a) {
  PreparedSweep p = prepare_sweep_command(a, "bench");
  // SIGTERM or SIGINT (a time limit): the variant under way finishes, and sweep.csv and
  // report.html are written with what was measured (exit 143 or 130), as kiln tune saves.
  const StopSignal signals;
  p.options.stop = [] { return StopSignal::stopped() != 0; };
  const SweepResult r = run_prepared_sweep(p);
  size_t timed = 0;
  std::set<std::string> shapes;
  for (const SweepRow& row : r.rows) {
    timed += row.timing.has_value();
    shapes.insert(r.items[row.item].key.id);
  }
  fmt::print("{} variant{} of {} layer shape{} on {} ({}): {} passed the check, {} failed; {}\n"
             "wrote {}/sweep.csv, {}/report.html\n",
             r.rows.size(), r.rows.size() == 1 ? "" : "s", shapes.size(),
             shapes.size() == 1 ? "" : "s", r.gpu.name, r.device, r.rows.size() - r.failed,
             r.failed, r.device == "emu" ? "nothing timed (emu)" : fmt::format("{} timed", timed),
             r.dir, r.dir);
  if (r.stopped)
    throw Stopped(StopSignal::stopped(),
                  fmt::format("{} after {} of {} items; sweep.csv and report.html hold them",
                              strsignal(StopSignal::stopped()), r.rows.size(),
                              r.shard_items - r.skipped));
  if (!r.context_lost.empty()) throw kiln::Error(r.context_lost);
  if (r.failed)
    throw CheckFailed(fmt::format("{} of {} variants differ from the reference (see {}/sweep.csv)",
                                  r.failed, r.rows.size(), r.dir));
}

} // namespace

void add_bench(CLI::App& app) {
  auto a = std::make_shared<SweepArgs>();
  CLI::App* cmd = app.add_subcommand(
      "bench",
      "time every valid generated variant of each conv, linear and pooling layer of MODEL (or "
      "one layer) on the GPU, after checking it against the CPU reference, beside cuDNN's best "
      "algorithm: DIR/sweep.csv (stable columns) and DIR/report.html.\n"
      "Examples:\n"
      "  kiln bench resnet18 --dtype f16 -o bench/r18\n"
      "  kiln bench conv:n=32,c=128,h=28,w=28,k=128,r=3,s=1,p=1 --dtype f16 -o bench/c128\n"
      "  kiln bench conv:c=8,h=8,w=8,k=8,r=3,p=1 --gpu h100 --device emu -o /tmp/b  "
      "(check only; no GPU needed)");
  a->add_to(cmd, true);
  cmd->callback([a] { bench_cmd(*a); });
}

} // namespace kiln::cli
