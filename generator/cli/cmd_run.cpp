// kiln run: one inference or training step of a model on a backend.
#include "generator/cli/commands.hpp"
#include "generator/cli/format.hpp"
#include "generator/cli/model_args.hpp"
#include "generator/cli/plan_args.hpp"
#include "generator/cli/progress.hpp"
#include "generator/cli/run_setup.hpp"
#include "generator/emit/generate.hpp"
#include "generator/lower/lower.hpp"
#include "generator/lower/plan_builder.hpp"
#include "generator/gpu/gpu_desc.hpp"
#include "generator/schedule/budget.hpp"
#include "generator/schedule/strategy.hpp"
#include "generator/schedule/tiled_strategy.hpp"
#include "runtime/cpu/backend.hpp"
#include "runtime/cuda/backend.hpp"
#include "runtime/error.hpp"
#include "runtime/executor.hpp"
#include "runtime/fold_batch.hpp"
#include "runtime/io/file.hpp"
#include "runtime/io/npy.hpp"
#include "runtime/io/safetensors.hpp"
#include "runtime/json_util.hpp"
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
  std::string gpu = "h200";
  int bench = 0;
};

void run(const RunArgs& a) {
  const ModelInput mi = load_model_input(a.model, a.dev.input);
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
    throw Error("", "--output", "is required for inference (unless --bench)");

  LowerOptions lo;
  lo.train = a.train;
  lo.lr = a.lr;
  a.plan.check(a.train);
  const bool tiled = a.plan.schedule == "tiled";
  const bool scheduled = a.plan.scheduled(a.train);
  if (a.dev.device == "cpu" && (a.plan.sparse != "auto" || !a.plan.profile.empty()))
    throw Error("", a.plan.sparse != "auto" ? "--sparse" : "--profile",
                "plans the generated kernels of --device emu or gpu; the cpu backend runs the "
                "reference of every layer");
  const std::string strategy = a.plan.schedule.empty() ? "store-all" : a.plan.schedule;
  Plan plan;
  std::string schedule_note;
  std::unique_ptr<Backend> backend;
  if (a.dev.device == "cpu") {
    if (tiled) {
      ScheduleOptions so;
      so.slots = a.plan.slots;
      so.lower = lo;
      TiledSchedule t = schedule_tiled(m, load_gpu(a.gpu), so, a.plan.budget, a.plan.tiles);
      schedule_note = fmt::format(
          ", schedule tiled: {} tiles{}{} (plan peak {}, predicted time x{:.2f} of untiled)",
          t.tiles(), t.budget_bytes >= 0 ? " within " + human_bytes(t.budget_bytes) : "",
          a.train ? ", rest " + t.rest : "", human_bytes(t.peak_bytes),
          t.time_us / t.untiled_time_us);
      plan = finish_plan(std::move(t.steps));
    } else if (scheduled) {
      ScheduleOptions so;
      so.slots = a.plan.slots;
      so.lower = lo;
      const TrainingScheduler sched(m, load_gpu(a.gpu), so);
      const int64_t budget = a.plan.budget.empty()
                                 ? sched.store_all_peak()
                                 : parse_budget(a.plan.budget, sched.store_all_peak());
      const TrainingSchedule ts = sched.solve(*parse_strategy(strategy), budget);
      plan = sched.plan(ts);
      schedule_note = fmt::format(
          ", schedule {} within {} (predicted peak {}, time x{:.3f} of store-all)", strategy,
          human_bytes(budget), human_bytes(ts.peak_bytes), ts.time_us / ts.store_all_time_us);
    } else {
      plan = lower_model(m, lo);
    }
    backend = std::make_unique<cpu::CpuBackend>();
  } else {
    // The generated kernels: kiln generate into a directory kept per configuration, then
    // the device's compile (cached, so a repeated run compiles nothing).
    const GpuDesc g = load_gpu(a.gpu);
    GenerateOptions go;
    go.train = a.train;
    go.lr = a.lr;
    if (scheduled)
      a.plan.apply(go);
    else
      go.cudnn_only = a.plan.kernels == "cudnn", a.plan.apply_sparse(go);
    GeneratedRun gr = prepare_generated(m, g, go, a.dev.device);
    backend = std::move(gr.backend);
    plan = std::move(gr.plan);
    if (scheduled) {
      // What the generator chose, from the manifest.
      const auto bytes = io::read_file(gr.dir + "/manifest.json");
      const nlohmann::json man =
          json_util::parse(std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size()),
                           gr.dir + "/manifest.json");
      const nlohmann::json sc = man.value("schedule", nlohmann::json::object());
      schedule_note = fmt::format(", schedule {}", strategy);
      if (sc.contains("tiles"))
        schedule_note += fmt::format(": {} tiles over {}", sc["tiles"].get<std::string>(),
                                     sc.value("segment", std::string("the segment")));
      if (!a.plan.budget.empty()) schedule_note += " within " + a.plan.budget;
      if (sc.contains("rest")) schedule_note += ", rest " + sc["rest"].get<std::string>();
    }
  }
  Progress progress(plan);
  ExecutorOptions eo;
  eo.on_step = progress.callback();
  Executor ex(plan, *backend, eo);
  bind_weights_and_input(ex, plan, a.dev, input, a.model.model);
  if (a.train) {
    Tensor target = io::read_npy(a.target);
    if (target.dtype() != DType::i64 && target.dtype() != DType::i32)
      throw Error(
          a.target, "",
          cat("targets must be integer class indices (int64), not ", dtype_name(target.dtype())));
    if (target.shape() != plan.buffers[plan.target].shape)
      throw Error(a.target, "",
                  cat("has shape ", shape_str(target.shape()), ", expected ",
                      shape_str(plan.buffers[plan.target].shape)));
    ex.write(plan.target, target.to(DType::i64));
  }

  const auto t0 = std::chrono::steady_clock::now();
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
    io::write_npy(a.output, y);
  }
  if (a.train) {
    io::Safetensors g;
    g.tensors = collect_grads(ex, plan);
    g.metadata["kiln"] = KILN_VERSION;
    g.metadata["model"] = m.name;
    io::write_safetensors(a.grads, g);
  }
  fmt::print("{} {} on {}: input {}, {:.3f} s, peak live activations {}", m.name,
             a.train ? "training step" : "forward", a.dev.device, shape_str(m.input_shape), secs,
             human_bytes(ex.peak_transient_bytes()));
  if (a.train) fmt::print(", loss {:.6g}", ex.read(plan.loss).get(0));
  // On the device, what it holds: parameters, gradients, activations and workspaces.
  if (const auto* cuda = dynamic_cast<const CudaBackend*>(backend.get()))
    fmt::print(", device arena {}", human_bytes(cuda->arena_bytes()));
  fmt::print("{}\n", schedule_note);
  if (a.bench > 0) {
    // The step above warmed up (kernels loaded, graphs captured); the device warms up more.
    const StepTimes t = time_steps(*backend, a.dev.device == "gpu" ? 3 : 0, a.bench, [&] {
      ex.run("forward");
      if (a.train) ex.run("backward");
    });
    fmt::print("bench: median {:.3f} ms over {} runs (min {:.3f}, max {:.3f}), {:.1f} images/s{}\n",
               t.median(), a.bench, t.min(), t.max(),
               double(mi.images) * 1000.0 / t.median(),
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
  cmd->add_option("--output", a->output, "where to write the first output (.npy)");
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
      "descriptor the kernels (emu) and the schedule's cost model are made for (default h200)");
  cmd->callback([a] { run(*a); });
}

} // namespace kiln::cli
