// A sweep of kiln bench or kiln tune ready to run: the model generated with every variant
// (or the cost model's pick), its work items, its directory (created and locked) and the
// options of sweep_directory. Here, above emit, because generating is part of it.
#pragma once

#include "generator/emit/generate.hpp"
#include "generator/tune/sweep_dir.hpp"
#include "runtime/io/file_lock.hpp"

#include <optional>
#include <string>
#include <vector>

namespace kiln {

struct SweepRequest {
  std::string command = "bench"; // or "tune": in titles, log lines and messages
  std::string device = "gpu";
  std::string variants = "all"; // or "default"
  std::string shard;            // "I/N", "" the whole sweep
  // Layers to sweep, by the name of one of their nodes ("layer3.1.conv2"): a shape is swept
  // where one of its layers has a node of that name. Empty: every layer.
  std::vector<std::string> layers;
  // Variants to sweep besides each shape's cost-model pick, by text their names contain
  // ("_pp_"). Empty: every variant (with variants "all").
  std::vector<std::string> match;
  // The training step's plan (forward, loss, backward, update) rather than inference's: its
  // weight gradients are swept too.
  bool train = false;
  std::string output;           // "": a directory in the cache
  uint64_t seed = 1;
  int64_t check_images = CheckOptions{}.images;
  int runs = 50, warmup = 10;
};

struct PreparedSweep {
  Model model;
  GpuDesc gpu;
  Generated gen;
  // -o, or <cache>/sweeps/<hash of model, GPU, kiln, device, variants and shard>: shards
  // started at once on one machine never share a directory.
  std::string dir;
  std::vector<WorkItem> items;
  SweepOptions options; // the caller may add skip, done and stop
  // Held while sweeping: a second sweep into the same directory is refused, not clobbered.
  std::optional<io::FileLock> lock;
};

// With `lock`, the directory is created and locked; another sweep holding it is a
// kiln::Error naming it. Throws kiln::Error for a bad shard or a model with nothing to sweep.
PreparedSweep prepare_sweep(Model m, const GpuDesc& g, const SweepRequest& r, bool lock = true);

// Writes DIR/generated, then runs the sweep and writes its files; a variant failing its
// check is in the CSV (the caller decides the exit code).
SweepResult run_prepared_sweep(const PreparedSweep& p);

} // namespace kiln
