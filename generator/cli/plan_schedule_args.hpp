// The schedule options of the commands that generate a plan (generate, build): --schedule,
// --budget, --tiles and --slots, checked the same way in both.
#pragma once

#include "generator/emit/generate.hpp"

#include <CLI/CLI.hpp>
#include <string>

namespace kiln::cli {

struct PlanScheduleArgs {
  std::string schedule, budget, tiles;
  int slots = 500;

  void add_to(CLI::App* cmd);
  // Copies them into `o` (o.train set first); throws kiln::Error for combinations that mean
  // nothing: a recompute strategy or budget for inference, --tiles without tiled.
  void apply(GenerateOptions& o) const;
};

} // namespace kiln::cli
