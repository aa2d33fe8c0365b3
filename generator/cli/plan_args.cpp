#include "generator/cli/plan_args.hpp"

#include "runtime/error.hpp"

namespace kiln::cli {

void PlanArgs::add_to(CLI::App* cmd) {
  cmd->add_option("--layout", layout,
                  "activation layout of the generated kernels: auto (default: inference NHWC "
                  "where tensor-core convs serve most of the work; training the layout whose "
                  "whole step the cost model predicts faster), nchw, nhwc")
      ->check(CLI::IsMember({"auto", "nchw", "nhwc"}));
  cmd->add_option("--schedule", schedule,
                  "training: recompute strategy store-all (default), sqrt, rotor or dtr; gradients "
                  "are bit-identical whatever the strategy. tiled (training or inference): the "
                  "leading conv/pool layers run tile by tile (segmented fused tiling), the fewest "
                  "tiles that fit --budget")
      ->check(CLI::IsMember({"store-all", "sqrt", "rotor", "dtr", "tiled"}));
  cmd->add_option("--budget", budget,
                  "memory budget for live activations: bytes, 700MiB, 2GiB or 40% (of the "
                  "untiled store-all peak)");
  cmd->add_option("--tiles", tiles, "--schedule tiled: force RxC tiles (4x4, or 8 for 8x8)");
  cmd->add_option("--slots", slots, "rotor's memory discretisation (default 500)");
  cmd->add_option("--kernels", kernels,
                  "kiln (default): generated kernels, cuDNN only where no template serves; cudnn: "
                  "every step cuDNN computes as a cuDNN call (the peer plan benchmarks compare "
                  "against; the cpu and emu backends run those steps as the reference)")
      ->check(CLI::IsMember({"kiln", "cudnn"}));
  cmd->add_option("--sparse", sparse,
                  "the activation-sparse family: auto (default: where the input density is known, "
                  "from --profile or hints.activation_density, a conv whose sparse kernel the cost "
                  "model predicts faster dispatches on the device between it and the dense one), "
                  "off (none, hints included), force (every conv reading a relu's output runs "
                  "sparse, whatever the cost)")
      ->check(CLI::IsMember({"auto", "off", "force"}));
  cmd->add_option(
      "--profile", profile,
      "measured input densities of the conv layers (kiln-profile/1, from kiln profile); "
      "they override the layers' hints.activation_density");
  cmd->add_option("--tuning-db", tuning_db,
                  "measured winners from kiln tune (kiln-tuning/1): a layer whose shape has one "
                  "gets it, the others the cost model corrected by the measurements; default: "
                  "the GPU's database in the cache directory where one exists; none: the cost "
                  "model alone");
}

void PlanArgs::check(bool train) const {
  if (!train && schedule != "tiled" && (!schedule.empty() || !budget.empty()))
    throw Error(
        "", schedule.empty() ? "--budget" : "--schedule",
        "recompute schedules apply to training steps (--train); only tiled also runs inference");
  if (!tiles.empty() && schedule != "tiled")
    throw Error("", "--tiles", "forces the tiling of --schedule tiled");
}

void PlanArgs::check_device(const std::string& device) const {
  if (device == "cpu" && (sparse != "auto" || !profile.empty() || layout != "auto"))
    throw Error("",
                sparse != "auto"   ? "--sparse"
                : !profile.empty() ? "--profile"
                                   : "--layout",
                "plans the generated kernels of --device emu or gpu; the cpu backend runs the "
                "reference of every layer");
}

void PlanArgs::apply(GenerateOptions& o) const {
  check(o.train);
  o.schedule = schedule;
  o.budget = budget;
  o.tiles = tiles;
  o.slots = slots;
  o.cudnn_only = kernels == "cudnn";
  o.sparse = *parse_sparse_mode(sparse);
  o.tuning_db = tuning_db;
  if (layout != "auto") o.layout = layout == "nhwc" ? Layout::nhwc : Layout::nchw;
  if (!profile.empty()) o.profile = load_profile(profile);
}

} // namespace kiln::cli
