// The plan options of the commands that generate one (generate, build): --schedule,
// --budget, --tiles, --slots and --kernels, checked the same way in both.
#pragma once

#include "generator/emit/generate.hpp"

#include <CLI/CLI.hpp>
#include <string>

namespace kiln::cli {

struct PlanArgs {
  std::string schedule, budget, tiles;
  int slots = 500;
  std::string kernels = "kiln";

  void add_to(CLI::App* cmd);
  // Copies them into `o` (o.train set first); throws kiln::Error for combinations that mean
  // nothing: a recompute strategy or budget for inference, --tiles without tiled.
  void apply(GenerateOptions& o) const;
};

} // namespace kiln::cli
