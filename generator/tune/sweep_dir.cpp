#include "generator/tune/sweep_dir.hpp"

#include "generator/compile/device_backend.hpp"
#include "generator/tune/device_timing.hpp"
#include "generator/tune/sweep_csv.hpp"
#include "generator/tune/sweep_report.hpp"
#include "runtime/error.hpp"
#include "runtime/io/file.hpp"
#include "runtime/progress.hpp"

#include <fmt/format.h>
#include <set>

namespace kiln {

SweepResult sweep_directory(const std::string& dir, const Plan& plan, std::vector<WorkItem> items,
                            const GpuDesc& g, const SweepOptions& o) {
  SweepResult r;
  r.gpu = g;
  r.device = o.device;
  r.dir = dir;
  r.items = std::move(items);
  std::vector<size_t> mine;
  for (size_t i : shard_items(r.items.size(), o.shard))
    if (!o.skip || !o.skip(r.items[i])) mine.push_back(i);
  r.skipped = shard_items(r.items.size(), o.shard).size() - mine.size();
  r.shard_items = mine.size() + r.skipped;
  if (!o.log_as.empty() && !ProgressLine::stderr_is_terminal())
    fmt::print(stderr, "kiln: {}: {} of {} items to measure ({} measured before){}\n", o.log_as,
               mine.size(), r.shard_items, r.skipped,
               mine.empty() ? "" : "; compiling the kernels first");
  const std::string gdir = dir + "/generated";
  DeviceBackendOptions bo;
  bo.progress = o.progress;
  bo.cuda.graphs = false; // one launch per check
  SweepDevice dev;
  dev.name = o.device;
  dev.check_images = o.check_images;
  if (!mine.empty()) dev.check = compiled_backends(gdir, o.device, bo); // a finished rerun: none
  if (o.device != "emu") {
    TimingOptions to;
    to.runs = o.runs;
    to.warmup = o.warmup;
    to.l2_bytes = g.l2_bytes;
    // Timed under CUDA graphs, as `kiln run` runs a network: launched one by one, a call's
    // host work sits between the events (on the H100 the per-layer cuDNN times, 85-290 us,
    // hardly depended on the layer's size and summed to 2.4x the cuDNN-only network's:
    // bench/results/h100_2026-11-26b).
    CudaOptions timed;
    timed.graphs = true;
    // A step CUDA cannot capture (a cuDNN engine that synchronizes or allocates) is timed
    // launch by launch, saying so.
    dev.time = [graphs = cuda_backends(gdir, timed), launches = dev.check, to](const Plan& single) {
      try {
        return time_rotated(single, *graphs(), to);
      } catch (const Error& e) {
        DeviceTiming t = time_rotated(single, *launches(), to);
        t.note = cat("timed launch by launch, host work included (no CUDA graph: ", e.what(), ")");
        return t;
      }
    };
  }
  // One line while the sweep runs: a bar, the count, the item; in a log, a line per item.
  ProgressLine line(o.progress);
  SweepHooks hooks;
  hooks.progress = [&](size_t done, size_t total, const WorkItem& w) {
    if (done == total) return line.clear();
    line.draw([&] {
      return fmt::format("{} {}/{} {} {}", ProgressLine::bar(done, total), done, total,
                         w.layers.empty() ? "" : w.layers.front(), w.variant.name);
    });
  };
  size_t finished = 0;
  std::set<std::string> told; // shapes whose cuDNN peer has a note (no time, or how), said once
  hooks.done = [&](const SweepRow& row) {
    const WorkItem& w = r.items[row.item];
    // Both branches views: `cond ? "sweep" : o.log_as` is a temporary std::string, whose view
    // dangles (the H100 run of 2026-11-27 printed garbage for the command's name).
    const std::string_view as = o.log_as.empty() ? std::string_view("sweep") : o.log_as;
    const std::string& layer = w.layers.empty() ? w.key.id : w.layers.front();
    if (!row.cudnn_note.empty() && told.insert(w.key.id).second) {
      line.clear();
      fmt::print(stderr, "kiln: {}: {} cuDNN time for {}: {}\n", as, row.cudnn_ms ? "the" : "no",
                 layer, row.cudnn_note);
    }
    if (row.timing && !row.timing->note.empty()) {
      line.clear();
      fmt::print(stderr, "kiln: {}: {} {}: {}\n", as, layer, w.variant.name, row.timing->note);
    }
    if (o.done) o.done(w, row);
    ++finished;
    if (o.log_as.empty() || line.active()) return;
    fmt::print(stderr, "kiln: {} {}/{} {} {}: {}\n", o.log_as, finished + r.skipped, r.shard_items,
               w.layers.empty() ? "" : w.layers.front(), w.variant.name,
               !row.check.pass ? "FAIL"
               : row.timing    ? fmt::format("{:.4g} ms", row.timing->median_ms)
                               : std::string("pass"));
  };
  hooks.stop = o.stop;
  hooks.context_lost = [&](const std::string& why) { r.context_lost = why; };
  r.rows = run_sweep(plan, r.items, mine, dev, o.seed, hooks);
  r.stopped = r.rows.size() < mine.size() && r.context_lost.empty();
  for (const SweepRow& row : r.rows)
    r.failed += !row.check.pass;
  io::write_file_atomic(dir + "/sweep.csv", sweep_csv(g.identity(), o.device, r.items, r.rows));
  io::write_file_atomic(dir + "/report.html",
                        sweep_report_html(o.title, o.device, r.items, r.rows));
  return r;
}

} // namespace kiln
