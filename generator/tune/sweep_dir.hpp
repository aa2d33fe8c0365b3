// A sweep in a directory (kiln bench, kiln tune): the kernels kiln generate wrote into
// DIR/generated compiled for the device, this shard's work items checked on it (and timed,
// on a GPU), then DIR/sweep.csv and DIR/report.html of the items this run measured. A
// variant failing its check is a row like any other; the caller decides what that means.
#pragma once

#include "generator/gpu/gpu_desc.hpp"
#include "generator/tune/shard.hpp"
#include "generator/tune/sweep.hpp"

#include <functional>
#include <string>
#include <vector>

namespace kiln {

struct SweepOptions {
  std::string device = "gpu"; // gpu (check, then time with CUDA events) or emu (check only)
  Shard shard;
  uint64_t seed = 1; // of the check's random inputs
  int64_t check_images = CheckOptions{}.images; // of a large batch, the images compared
  int runs = 50, warmup = 10;
  std::string title;     // the report's
  bool progress = false; // the compile's and the sweep's progress lines on stderr
  // Without a progress line (a batch job's log), one line per item on stderr as it
  // completes: "kiln: tune 3/12 conv <variant>: pass".
  std::string log_as;
  // Items measured before (kiln tune's rerun reads them from its database): left out.
  std::function<bool(const WorkItem&)> skip;
  // Each row as it completes (before its log line); asked between items whether to stop.
  std::function<void(const WorkItem&, const SweepRow&)> done;
  std::function<bool()> stop;
};

struct SweepResult {
  GpuDesc gpu;
  std::string device, dir;
  std::vector<WorkItem> items; // all of the sweep's, in shard order
  std::vector<SweepRow> rows;  // this run's: this shard's items, less those skipped
  size_t shard_items = 0;      // the shard's items, skipped ones included
  size_t skipped = 0;
  bool stopped = false; // by SweepOptions::stop, before the shard's last item
  std::string context_lost; // why the sweep ended early: an item's sticky CUDA error
  size_t failed = 0;
};

// `items` are sweep_work's of `plan`, the plan kiln generate wrote into `dir`/generated.
SweepResult sweep_directory(const std::string& dir, const Plan& plan, std::vector<WorkItem> items,
                            const GpuDesc& g, const SweepOptions& o);

} // namespace kiln
