// kiln build: a standalone executable for one model on one GPU
// (generator/run/standalone_program.hpp).
#include "generator/cli/commands.hpp"
#include "generator/cli/format.hpp"
#include "generator/cli/model_args.hpp"
#include "generator/cli/plan_args.hpp"
#include "generator/model/onnx/onnx_import.hpp"
#include "generator/run/standalone_program.hpp"
#include "runtime/progress.hpp"

#include <fmt/format.h>

namespace kiln::cli {

namespace {

struct BuildArgs {
  ModelArgs model;
  std::string gpu;
  std::string output;
  bool train = false;
  PlanArgs schedule;
};

void build(const BuildArgs& a) {
  const Model m = a.model.load();
  const GpuDesc g = load_gpu(a.gpu);
  GenerateOptions go;
  go.train = a.train;
  a.schedule.apply(go);
  ProgramOptions po;
  po.progress = ProgressLine::stderr_is_terminal();
  const Program p = build_program(m, g, go, a.output, po);
  fmt::print("built {} ({}): {} for {} ({}), {} kernels, {}{}\n", a.output, human_bytes(p.bytes),
             m.name, g.name, g.arch, p.kernels, p.cudnn ? "cuDNN linked" : "no cuDNN",
             a.train ? ", training step" : "");
  // The program embeds the plan, not the weights: an ONNX model's travel as a file.
  if (is_onnx_path(a.model.model))
    fmt::print("its weights: kiln import {} -o MODEL.json --weights-out W.safetensors, then {} "
               "--weights W.safetensors\n",
               a.model.model, a.output);
}

} // namespace

void add_build(CLI::App& app) {
  auto a = std::make_shared<BuildArgs>();
  CLI::App* cmd = app.add_subcommand(
      "build",
      "a standalone executable for MODEL on the GPU: plan and kernel images embedded; run it as "
      "BIN --input X.npy --output Y.npy [--weights W.safetensors] [--bench N]");
  a->model.add_to(cmd);
  cmd->add_option("--gpu", a->gpu,
                  "GPU descriptor (a file or a shipped name; `kiln gpu detect -o` for this one)")
      ->required();
  cmd->add_option("-o,--output", a->output, "the executable to write")->required();
  cmd->add_flag("--train", a->train, "a training step (with --target/--grads at run time)");
  a->schedule.add_to(cmd);
  cmd->callback([a] { build(*a); });
}

} // namespace kiln::cli
