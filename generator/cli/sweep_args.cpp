#include "generator/cli/sweep_args.hpp"

#include "generator/gpu/detect.hpp"
#include "generator/tune/layer_spec.hpp"
#include "runtime/cuda/device.hpp"
#include "runtime/error.hpp"

#include <fmt/format.h>

namespace kiln::cli {

const char* const kSweepTargetHelp =
    "a model (file or shipped name) or one layer: conv:c=128,h=28,w=28,k=128,r=3,s=1,p=1 "
    "(keys n c h w k r s p d g bias relu), linear:c=2048,k=1000 (n c k bias relu), "
    "pool:c=64,h=56,w=56,r=3,s=2,p=1,mode=max (n c h w r s p mode); unknown keys are errors";

const char* const kCheckImagesHelp =
    "N: of a batch larger than N, the images a conv, pooling or linear kernel is compared with "
    "the CPU reference on (default 4: the first two, the last and seeded others); every image "
    "still runs and is checked for unwritten elements. 0: every image (at batch 256 the f64 "
    "reference takes seconds to minutes per kernel)";

void SweepArgs::add_to(CLI::App* cmd, bool required) {
  auto* target = cmd->add_option("MODEL", model.model, kSweepTargetHelp);
  if (required) target->required();
  cmd->add_option("--batch", model.batch, "override the batch size (a layer spec's n)");
  cmd->add_option("--image", model.image, "override the input image size, HxW");
  cmd->add_option("--dtype", model.dtype, "element type: f32, f16 or bf16")
      ->check(CLI::IsMember({"f32", "f16", "bf16"}));
  cmd->add_option("--gpu", gpu,
                  "auto (default: describe the live GPU) or a descriptor: a kiln-gpu/1 file or a "
                  "shipped name (h100, a100, ...); --device emu needs a descriptor");
  cmd->add_option("--device", device,
                  "gpu (default: check, then time with CUDA events) or emu (check every variant "
                  "on the CPU emulator; times nothing)")
      ->check(CLI::IsMember({"gpu", "emu"}));
  auto* o = cmd->add_option("-o,--output", output,
                            std::string("directory for generated/, sweep.csv and report.html") +
                                (required ? "" : " (default: one in the cache directory)"));
  if (required) o->required();
  cmd->add_option("--variants", variants,
                  "all (default): every valid variant of each layer; default: the cost model's "
                  "pick only (against cuDNN)")
      ->check(CLI::IsMember({"all", "default"}));
  cmd->add_option("--shard", shard,
                  "I/N: only this shard's work items — the (layer shape, variant) pairs sorted "
                  "by shape key then variant name, item j to shard j mod N");
  cmd->add_option("--layers", layers,
                  "NAME[,NAME...]: only the layers with a node of one of these names (as the "
                  "model names them: layer3.1.conv2), every variant of their shapes; a name no "
                  "swept layer has is an error that lists them")
      ->delimiter(',');
  cmd->add_option("--match", match,
                  "TEXT[,TEXT...]: of every variant (--variants all), only those whose names "
                  "contain one of these texts, beside each layer's cost-model pick (the "
                  "baseline): --match _pp_ times the ping-pong Hopper tiles against the chosen "
                  "ones; a text no variant has is an error")
      ->delimiter(',');
  cmd->add_flag("--train", train,
                "sweep a training step's layers (the plan `kiln generate --train` writes): its "
                "forward convs and linears, its data gradients (forward convs of dy) and its "
                "weight gradients (conv2d.backward_weight, against cuDNN's backward filter; a "
                "weight gradient split over positions is timed without the partial.sum after it)");
  cmd->add_option("--runs", runs, "timed runs per variant (median; at least 20)")
      ->check(CLI::Range(20, 100000));
  cmd->add_option("--warmup", warmup, "untimed runs before timing");
  cmd->add_option("--seed", seed, "seed of the check's random inputs");
  cmd->add_option("--check-images", check_images, kCheckImagesHelp)->check(CLI::NonNegativeNumber);
}

namespace {

Model sweep_model(const SweepArgs& a) {
  if (!is_layer_spec(a.model.model)) return a.model.load();
  Model m = layer_spec_model(a.model.model);
  apply_overrides(m, a.model.overrides());
  return m;
}

GpuDesc sweep_gpu(const SweepArgs& a) {
  if (a.gpu != "auto") return load_gpu(a.gpu);
  try {
    return detect_gpu();
  } catch (const Error& e) {
    throw Error("", "--gpu auto",
                cat(e.message(), a.device == "emu"
                                     ? "; to sweep on the emulator name a descriptor (--gpu h100)"
                                     : ""));
  }
}

} // namespace

PreparedSweep prepare_sweep_command(const SweepArgs& a, const std::string& command, bool lock) {
  if (!a.shard.empty()) parse_shard(a.shard); // a bad shard before anything slow
  // Without a driver, say so before anything else (exit 2), never crash; a dry run (no
  // lock) measures nothing, so it runs on a login node too.
  if (a.device == "gpu" && lock) require_device("", 0);
  Model m = sweep_model(a);
  const GpuDesc g = sweep_gpu(a);
  SweepRequest r;
  r.command = command;
  r.device = a.device;
  r.variants = a.variants;
  r.shard = a.shard;
  r.layers = a.layers;
  r.match = a.match;
  r.train = a.train;
  r.output = a.output;
  r.seed = a.seed;
  r.check_images = a.check_images;
  r.runs = a.runs, r.warmup = a.warmup;
  PreparedSweep p = prepare_sweep(std::move(m), g, r, lock);
  if (lock && a.device == "emu") // a sweep that runs (not a dry run), its directory secured
    fmt::print(stderr,
               "kiln: note: --device emu checks every variant against the CPU reference on the "
               "emulator; no timing there is meaningful, so it times nothing (the CSV's timing "
               "columns are empty)\n");
  return p;
}

} // namespace kiln::cli
