#include "generator/tune/sweep_dir.hpp"

#include "generator/compile/device_backend.hpp"
#include "generator/tune/device_timing.hpp"
#include "generator/tune/sweep_csv.hpp"
#include "generator/tune/sweep_report.hpp"
#include "runtime/io/file.hpp"
#include "runtime/progress.hpp"

#include <fmt/format.h>

namespace kiln {

SweepResult sweep_directory(const std::string& dir, const Plan& plan, std::vector<WorkItem> items,
                            const GpuDesc& g, const SweepOptions& o) {
  SweepResult r;
  r.gpu = g;
  r.device = o.device;
  r.dir = dir;
  r.items = std::move(items);
  const std::string gdir = dir + "/generated";
  DeviceBackendOptions bo;
  bo.progress = o.progress;
  bo.cuda.graphs = false; // one launch per check and per timed run
  SweepDevice dev;
  dev.name = o.device;
  dev.check = compiled_backends(gdir, o.device, bo);
  if (o.device != "emu") {
    TimingOptions to;
    to.runs = o.runs;
    to.warmup = o.warmup;
    to.l2_bytes = g.l2_bytes;
    dev.time = [make = dev.check, to](const Plan& single) {
      const auto cuda = make();
      return time_rotated(single, *cuda, to);
    };
  }
  // One line while the sweep runs: a bar, the count, the item.
  ProgressLine line(o.progress);
  r.rows = run_sweep(plan, r.items, shard_items(r.items.size(), o.shard), dev, o.seed,
                     [&](size_t done, size_t total, const WorkItem& w) {
                       if (done == total) return line.clear();
                       line.draw([&] {
                         return fmt::format("{} {}/{} {} {}", ProgressLine::bar(done, total), done,
                                            total, w.layers.empty() ? "" : w.layers.front(),
                                            w.variant.name);
                       });
                     });
  for (const SweepRow& row : r.rows)
    r.failed += !row.check.pass;
  io::write_file_atomic(dir + "/sweep.csv", sweep_csv(g.identity(), o.device, r.items, r.rows));
  io::write_file_atomic(dir + "/report.html",
                        sweep_report_html(o.title, o.device, r.items, r.rows));
  return r;
}

} // namespace kiln
