// The plan options of the commands that make one (generate, build, run): --schedule,
// --budget, --tiles, --slots, --kernels, --sparse and --profile, described and checked the
// same way in all.
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

  void add_to(CLI::App* cmd);
  // Throws kiln::Error for combinations that mean nothing: a recompute strategy or budget
  // for inference, --tiles without tiled.
  void check(bool train) const;
  // Whether the plan is scheduled: tiled, or training under a strategy or budget.
  bool scheduled(bool train) const;
  // Checks, then copies them into `o` (o.train set first); loads the profile.
  void apply(GenerateOptions& o) const;
  // Only the sparse family's options (--sparse, --profile) and --tuning-db: plans made
  // without a schedule.
  void apply_sparse(GenerateOptions& o) const;
};

} // namespace kiln::cli
