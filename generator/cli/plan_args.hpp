// The plan options of the commands that make one (generate, build, run, train): --layout,
// --schedule, --budget, --tiles, --slots, --kernels, --sparse and --profile, described and
// checked the same way in all.
#pragma once

#include "generator/emit/generate.hpp"

#include <CLI/CLI.hpp>
#include <string>

namespace kiln::cli {

struct PlanArgs {
  std::string schedule, budget, tiles;
  int slots = 500;
  std::string kernels = "kiln";
  std::string sparse = "auto";
  std::string profile;   // kiln-profile/1 densities for the sparse family
  std::string tuning_db; // measured winners (kiln tune): a path, none, or "" (the default)
  std::string layout = "auto";

  void add_to(CLI::App* cmd);
  // Throws kiln::Error for combinations that mean nothing: a recompute strategy or budget
  // for inference, --tiles without tiled.
  void check(bool train) const;
  // Throws kiln::Error for the kernels' options (--sparse, --profile) on the cpu backend,
  // which runs the reference of every layer.
  void check_device(const std::string& device) const;
  // Checks, then copies them into `o` (o.train set first); loads the profile.
  void apply(GenerateOptions& o) const;
};

} // namespace kiln::cli
