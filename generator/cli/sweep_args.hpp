// The options of the sweep kiln bench and kiln tune share: a model or one layer (generator/
// tune/layer_spec.hpp) whose conv, linear and pooling steps get every valid variant
// generated into DIR/generated/, then checked and timed there (generator/tune/sweep_dir.hpp).
#pragma once

#include "generator/cli/model_args.hpp"
#include "generator/run/prepared_sweep.hpp"

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace kiln::cli {

struct SweepArgs {
  ModelArgs model; // a model, or a layer spec in model.model
  std::string gpu = "auto";
  std::string device = "gpu";
  std::string output;
  std::string variants = "all";
  std::string shard; // "I/N"; "" the whole sweep
  std::vector<std::string> layers; // --layers: only these (SweepRequest::layers)
  std::vector<std::string> match;  // --match: only these variants (SweepRequest::match)
  bool train = false;              // --train: a training step's layers (SweepRequest::train)
  uint64_t seed = 1;
  int64_t check_images = CheckOptions{}.images;
  int runs = 50, warmup = 10;

  // bench needs MODEL and -o; tune, which also has subcommands, checks MODEL itself and
  // defaults to a directory in the cache.
  void add_to(CLI::App* cmd, bool required);
};

// The sweep the arguments ask for, ready to run (generator/run/prepared_sweep.hpp).
PreparedSweep prepare_sweep_command(const SweepArgs& a, const std::string& command,
                                    bool lock = true);

// The MODEL argument's help: a model or a layer spec.
extern const char* const kSweepTargetHelp;
// --check-images (kiln bench, tune and check).
extern const char* const kCheckImagesHelp;

} // namespace kiln::cli
