#include "generator/cli/plan_args.hpp"

#include "runtime/error.hpp"

namespace kiln::cli {

void PlanArgs::add_to(CLI::App* cmd) {
  cmd->add_option(
         "--schedule", schedule,
         "--train: recompute strategy (store-all, sqrt, rotor, dtr); tiled (segmented fused "
         "tiling: the leading conv/pool layers tile by tile) for training or inference")
      ->check(CLI::IsMember({"store-all", "sqrt", "rotor", "dtr", "tiled"}));
  cmd->add_option("--budget", budget,
                  "activation memory budget (bytes, 700MiB, 40% of the untiled store-all peak)");
  cmd->add_option("--tiles", tiles, "--schedule tiled: force RxC tiles (4x4, or 8 for 8x8)");
  cmd->add_option("--slots", slots, "rotor's memory discretisation");
  cmd->add_option("--kernels", kernels,
                  "kiln (default): generated kernels, cuDNN only where no template serves; cudnn: "
                  "every step "
                  "cuDNN computes as a cuDNN call (the peer plan benchmarks compare against)")
      ->check(CLI::IsMember({"kiln", "cudnn"}));
}

void PlanArgs::apply(GenerateOptions& o) const {
  if (!o.train && schedule != "tiled" && (!schedule.empty() || !budget.empty()))
    throw Error(
        "", schedule.empty() ? "--budget" : "--schedule",
        "recompute schedules apply to training steps (--train); only tiled also runs inference");
  if (!tiles.empty() && schedule != "tiled")
    throw Error("", "--tiles", "forces the tiling of --schedule tiled");
  o.schedule = schedule;
  o.budget = budget;
  o.tiles = tiles;
  o.slots = slots;
  o.cudnn_only = kernels == "cudnn";
}

} // namespace kiln::cli
