// kiln run: one inference or training step of a model on a backend.
#include "generator/cli/commands.hpp"
#include "generator/cli/device_args.hpp"
#include "generator/cli/format.hpp"
#include "generator/cli/model_args.hpp"
#include "generator/cli/plan_args.hpp"
#include "generator/cli/plan_progress.hpp"
#include "generator/gpu/detect.hpp"
#include "generator/run/device_plan.hpp"
#include "generator/run/model_input.hpp"
#include "runtime/cuda/backend.hpp"
#include "runtime/error.hpp"
#include "runtime/executor.hpp"
#include "runtime/fold_batch.hpp"
#include "runtime/io/npy.hpp"
#include "runtime/io/safetensors.hpp"
#include "runtime/step_timer.hpp"
#include "runtime/weights.hpp"

#include <chrono>
#include <fmt/format.h>

namespace kiln::cli {

namespace {

struct RunArgs {
  ModelArgs model;
  DeviceArgs dev;
  std::string output;
  bool train = false;
  std::string target, grads;
  double lr = 0.01;
  bool update = false;
  PlanArgs plan;
  std::string gpu = "auto";
  int bench = 0;
};

// What the schedule chose, after the summary line.
std::string schedule_text(const ScheduleChoice& c, const RunArgs& a) {
  if (a.dev.device != "cpu") {
    std::string r = fmt::format(", schedule {}", c.strategy);
    if (!c.tiles.empty()) r += fmt::format(": {} tiles over {}", c.tiles, c.segment);
    if (!c.budget.empty()) r += " within " + c.budget;
    if (!c.rest.empty()) r += ", rest " + c.rest;
    return r;
  }
  if (c.strategy == "tiled")
    return fmt::format(
        ", schedule tiled: {} tiles{}{} (plan peak {}, predicted time x{:.2f} of untiled)", c.tiles,
        c.budget_bytes >= 0 ? " within " + human_bytes(c.budget_bytes) : "",
        a.train ? ", rest " + c.rest : "", human_bytes(c.peak_bytes), c.time_ratio);
  return fmt::format(", schedule {} within {} (predicted peak {}, time x{:.3f} of store-all)",
                     c.strategy, human_bytes(c.budget_bytes), human_bytes(c.peak_bytes),
                     c.time_ratio);
}

void run(const RunArgs& a) {
  const ModelInput mi = load_model_input(a.model.model, a.model.overrides(), a.dev.input);
  const Model& m = mi.model;
  const Tensor& input = mi.input;
  if (a.train && (a.target.empty() || a.grads.empty()))
    throw Error("", "--train", "needs --target T.npy and --grads G.safetensors");
  if (a.train && mi.images != input.shape()[0])
    throw Error(a.dev.input, "",
                cat("a training step of a folded model takes whole folds: ", mi.images,
                    " images is no multiple of the fold factor"));
  if (!mi.padding_note.empty()) fmt::print(stderr, "kiln: note: {}\n", mi.padding_note);
  if (!a.train && a.output.empty() && a.bench == 0)
    throw Error("", "-o/--output", "is required for inference (unless --bench)");

  a.plan.check(a.train);
  a.plan.check_device(a.dev.device);
  DevicePlanOptions dp;
  dp.device = a.dev.device;
  dp.progress = ProgressLine::stderr_is_terminal();
  dp.generate.train = a.train;
  dp.generate.lr = a.lr;
  a.plan.apply(dp.generate);
  if (a.dev.device != "cpu" || is_scheduled(dp.generate))
    dp.gpu = gpu_for_device(a.gpu, a.dev.device);
  // Everything before the timed phases (generating and compiling, or the cache; the device,
  // its libraries and modules; the weights): what a first run on a fresh machine waits for.
  const auto t_prepare = std::chrono::steady_clock::now();
  DevicePlan d = make_device_plan(m, dp);
  const Plan& plan = d.plan;
  Backend* backend = d.backend.get();
  const std::string schedule_note = d.schedule ? schedule_text(*d.schedule, a) : "";
  PlanProgress progress(plan);
  ExecutorOptions eo;
  eo.on_step = progress.callback();
  Executor ex(plan, *backend, eo);
  bind_initial_weights(ex, plan, a.dev.weights, a.model.model, a.dev.seed);
  ex.write(plan.inputs[0], input);
  if (a.train) {
    Tensor target = io::read_npy(a.target);
    if (target.dtype() != DType::i64 && target.dtype() != DType::i32)
      throw Error(
          a.target, "",
          cat("targets must be integer class indices (int64), not ", dtype_name(target.dtype())));
    ex.write(plan.target, held_target(plan, target, a.target).to(DType::i64));
  }

  const auto t0 = std::chrono::steady_clock::now();
  const double prepared = std::chrono::duration<double>(t0 - t_prepare).count();
  ex.run("forward");
  if (a.train) ex.run("backward");
  if (a.train && a.update) ex.run("update");
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  progress.done();

  if (!a.output.empty()) {
    Tensor y = ex.read(plan.outputs[0]);
    if (y.dtype() == DType::bf16) y = y.to(DType::f32); // .npy has no bf16
    // A padded fold's rows are dropped (a folded model's output has a row per image).
    if (mi.images < input.shape()[0] && !y.shape().empty() && y.shape()[0] == input.shape()[0])
      y = first_rows(y, mi.images);
    io::write_npy(a.output, y.reshaped(caller_output_shape(m, y.shape())));
  }
  if (a.train) {
    io::Safetensors g;
    g.tensors = collect_grads(ex, plan);
    g.metadata["kiln"] = KILN_VERSION;
    g.metadata["model"] = m.name;
    io::write_safetensors(a.grads, g);
  }
  fmt::print("{} {} on {}: input {}, {:.3f} s, peak live activations {}", m.name,
             a.train ? "training step" : "forward", a.dev.device, shape_str(caller_input_shape(m)),
             secs, human_bytes(ex.peak_transient_bytes()));
  if (a.train) fmt::print(", loss {:.6g}", ex.read(plan.loss).get(0));
  // On the device, what it holds: parameters, gradients, activations and workspaces.
  if (const auto* cuda = dynamic_cast<const CudaBackend*>(backend))
    fmt::print(", device arena {}", human_bytes(cuda->arena_bytes()));
  fmt::print("{}, prepared in {:.1f} s\n", schedule_note, prepared);
  if (a.bench > 0) {
    // The step above warmed up (kernels loaded, graphs captured); the device warms up more.
    const StepTimes t = time_steps(*backend, a.dev.device == "gpu" ? 3 : 0, a.bench, [&] {
      ex.run("forward");
      if (a.train) ex.run("backward");
    });
    fmt::print("bench: median {:.3f} ms over {} runs (min {:.3f}, max {:.3f}), {:.1f} images/s{}\n",
               t.median(), a.bench, t.min(), t.max(), double(mi.images) * 1000.0 / t.median(),
               a.dev.device == "gpu" ? " (CUDA events)" : " (host clock)");
  }
}

} // namespace

void add_run(CLI::App& app) {
  auto a = std::make_shared<RunArgs>();
  CLI::App* cmd = app.add_subcommand(
      "run", "one inference or training step: reads X.npy (its shape sets the batch and image "
             "size), writes the first output as Y.npy; with --train also the gradients");
  a->model.add_to(cmd);
  a->dev.add_to(cmd);
  cmd->add_option("-o,--output", a->output,
                  "where to write the first output (.npy); required for inference, unless "
                  "--bench");
  cmd->add_flag("--train", a->train,
                "training step: softmax cross-entropy on the first output's logits, backward");
  cmd->add_option("--target", a->target, "class indices, int64 .npy [N] (or [N, H, W])");
  cmd->add_option("--grads", a->grads, "where to write every parameter's gradient (.safetensors)");
  cmd->add_option("--lr", a->lr, "learning rate of the SGD update (with --update)");
  cmd->add_flag("--update", a->update, "also apply the SGD update (the gradients are unaffected)");
  a->plan.add_to(cmd);
  cmd->add_option(
         "--bench", a->bench,
         "then time N more steps (forward, and backward with --train) and print their median, "
         "min and max: CUDA events on the gpu after 3 warm-up steps, the host clock elsewhere")
      ->check(CLI::Range(1, 1000000));
  cmd->add_option(
      "--gpu", a->gpu,
      "descriptor the kernels and the schedule's cost model are made for: auto (default: the "
      "live GPU with --device gpu, else h200), a kiln-gpu/1 file or a shipped name (h100, ...)");
  cmd->callback([a] { run(*a); });
}

} // namespace kiln::cli
