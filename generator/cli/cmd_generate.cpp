// kiln generate: kernels, manifest and plan for a model on a GPU.
#include "generator/cli/commands.hpp"
#include "generator/cli/format.hpp"
#include "generator/cli/model_args.hpp"
#include "generator/cli/plan_args.hpp"
#include "generator/emit/generate.hpp"
#include "runtime/error.hpp"

#include <fmt/format.h>
#include <map>

namespace kiln::cli {

namespace {

struct GenerateArgs {
  ModelArgs model;
  std::string gpu;
  std::string output;
  std::string variants = "default";
  bool train = false;
  double lr = 0.01;
  PlanArgs schedule;
};

void generate_cmd(const GenerateArgs& a) {
  const Model m = a.model.load();
  const GpuDesc g = load_gpu(a.gpu);
  GenerateOptions o;
  o.train = a.train;
  o.lr = a.lr;
  o.all_variants = a.variants == "all";
  a.schedule.apply(o);
  const Generated gen = generate(m, g, o);
  write_generated(gen, a.output);
  std::map<std::string, int> families;
  int chosen = 0;
  for (const KernelRecord& r : gen.assigned.kernels)
    if (r.chosen) ++families[r.variant.family], ++chosen;
  std::string fam;
  for (const auto& [f, n] : families)
    fam += fmt::format("{}{} {}", fam.empty() ? "" : ", ", n, f);
  fmt::print(
      "generated {} for {} ({}): {} kernels ({}){}, {} cuDNN steps, {} layout, arena {}{}{}{}\n"
      "wrote {}/kernels/*.cu, manifest.json, plan.json\n",
      m.name, g.name, g.arch, chosen, fam,
      o.all_variants ? fmt::format(" + {} alternatives", gen.assigned.kernels.size() - chosen) : "",
      gen.assigned.library_steps.size(), layout_name(gen.layout), human_bytes(gen.plan.arena_bytes),
      gen.tf32.weights || gen.tf32.activations
          ? fmt::format(", {} weights rounded to tf32 once (prepare) and {} activations by their "
                        "producer",
                        gen.tf32.weights, gen.tf32.activations)
          : "",
      gen.gates.empty()
          ? ""
          : fmt::format(", {} squeeze-excite gate{} fused into {} conv{}", gen.gates.size(),
                        gen.gates.size() == 1 ? "" : "s", gen.gates.size() == 1 ? "its" : "their",
                        gen.gates.size() == 1 ? "" : "s"),
      gen.channel_views.views
          ? fmt::format(", {} channel copies as views ({} kept, {} steps fewer)",
                        gen.channel_views.views, gen.channel_views.copies,
                        gen.channel_views.steps_removed)
          : "",
      a.output);
}

} // namespace

void add_generate(CLI::App& app) {
  auto a = std::make_shared<GenerateArgs>();
  CLI::App* cmd = app.add_subcommand(
      "generate", "emit kernels specialized to each layer of MODEL and to the GPU: "
                  "DIR/kernels/*.cu, DIR/manifest.json, DIR/plan.json");
  a->model.add_to(cmd);
  cmd->add_option("--gpu", a->gpu,
                  "GPU descriptor: a kiln-gpu/1 file or a shipped name (h200, a100, ...)")
      ->required();
  cmd->add_option("-o,--output", a->output, "output directory (replaced when complete)")
      ->required();
  cmd->add_option("--variants", a->variants,
                  "default: one kernel per step; all: also every other valid variant, for sweeps")
      ->check(CLI::IsMember({"default", "all"}));
  cmd->add_flag("--train", a->train, "a training step (forward, loss, backward, SGD update)");
  cmd->add_option("--lr", a->lr, "learning rate of the update phase");
  a->schedule.add_to(cmd);
  cmd->callback([a] { generate_cmd(*a); });
}

} // namespace kiln::cli
