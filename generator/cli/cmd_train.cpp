// kiln train: many training steps over a dataset. Each minibatch runs the generated plan of
// one training step (forward, loss, backward, the optimizer's update phase) on the chosen
// backend; parameters and optimizer state stay in the plan's arena between steps. Every
// epoch ends with a validation pass (an inference plan with the same batch) and a checkpoint
// written atomically (train_checkpoint.hpp), from which --resume continues bit for bit.
#include "generator/cli/commands.hpp"
#include "generator/cli/format.hpp"
#include "generator/cli/model_args.hpp"
#include "generator/cli/plan_args.hpp"
#include "generator/cli/run_setup.hpp"
#include "generator/cli/train_checkpoint.hpp"
#include "generator/cli/train_data.hpp"
#include "generator/compile/cache.hpp"
#include "generator/emit/generate.hpp"
#include "generator/lower/lower.hpp"
#include "generator/lower/plan_builder.hpp"
#include "generator/gpu/gpu_desc.hpp"
#include "generator/model/model_json.hpp"
#include "generator/schedule/budget.hpp"
#include "generator/schedule/strategy.hpp"
#include "generator/schedule/tiled_strategy.hpp"
#include "runtime/cpu/backend.hpp"
#include "runtime/error.hpp"
#include "runtime/executor.hpp"
#include "runtime/io/safetensors.hpp"
#include "runtime/optimizer_state.hpp"
#include "runtime/weights.hpp"

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <optional>
#include <unistd.h>

namespace kiln::cli {

namespace {

using Clock = std::chrono::steady_clock;

struct TrainArgs {
  ModelArgs model;
  std::string data, labels, val_data, val_labels, distill;
  int64_t epochs = 10;
  std::string optimizer = "sgd";
  double lr = 0; // 0: the optimizer's default
  double momentum = 0, weight_decay = 0, beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  std::string device = "cpu", gpu = "h200";
  std::string weights;
  uint64_t seed = 0;
  std::string output;
  bool resume = false, overwrite = false;
  PlanArgs plan;
};

constexpr int64_t kDefaultBatch = 32;

// A plan of the model on the device, with its backend.
struct Device {
  Plan plan;
  std::unique_ptr<Backend> backend;
  std::string note; // the schedule, when there is one
};

Device make_device(const Model& m, const TrainArgs& a, const LowerOptions& lo) {
  Device d;
  const bool train = lo.train;
  const bool scheduled = train && a.plan.scheduled(true);
  if (a.device == "cpu") {
    if (train && a.plan.schedule == "tiled") {
      ScheduleOptions so;
      so.slots = a.plan.slots;
      so.lower = lo;
      TiledSchedule t = schedule_tiled(m, load_gpu(a.gpu), so, a.plan.budget, a.plan.tiles);
      d.note = fmt::format("schedule tiled: {} tiles, rest {} (plan peak {})", t.tiles(), t.rest,
                           human_bytes(t.peak_bytes));
      d.plan = finish_plan(std::move(t.steps));
    } else if (scheduled) {
      ScheduleOptions so;
      so.slots = a.plan.slots;
      so.lower = lo;
      const TrainingScheduler sched(m, load_gpu(a.gpu), so);
      const std::string strategy = a.plan.schedule.empty() ? "store-all" : a.plan.schedule;
      const int64_t budget = a.plan.budget.empty()
                                 ? sched.store_all_peak()
                                 : parse_budget(a.plan.budget, sched.store_all_peak());
      const TrainingSchedule ts = sched.solve(*parse_strategy(strategy), budget);
      d.plan = sched.plan(ts);
      d.note = fmt::format("schedule {} within {} (predicted peak {})", strategy,
                           human_bytes(budget), human_bytes(ts.peak_bytes));
    } else {
      d.plan = lower_model(m, lo);
    }
    d.backend = std::make_unique<cpu::CpuBackend>();
    return d;
  }
  GenerateOptions go;
  go.train = train;
  go.lr = lo.lr;
  go.recipe = lo.recipe;
  if (scheduled) {
    a.plan.apply(go);
    d.note = fmt::format("schedule {}{}", a.plan.schedule.empty() ? "store-all" : a.plan.schedule,
                         a.plan.budget.empty() ? "" : " within " + a.plan.budget);
  } else {
    go.cudnn_only = a.plan.kernels == "cudnn";
    a.plan.apply_sparse(go);
  }
  GeneratedRun gr = prepare_generated(m, load_gpu(a.gpu), go, a.device);
  d.plan = std::move(gr.plan);
  d.backend = std::move(gr.backend);
  return d;
}

// One line on stderr, redrawn at most ten times a second; silent when stderr is no terminal.
class EpochBar {
public:
  EpochBar(int64_t epoch, int64_t epochs, int64_t steps)
      : epoch_(epoch), epochs_(epochs), steps_(steps), active_(stderr_is_terminal()) {}
  void update(int64_t done, double loss, double acc, double images_per_s) {
    if (!active_) return;
    const auto now = Clock::now();
    if (drawn_ && now - last_ < std::chrono::milliseconds(100) && done < steps_) return;
    last_ = now;
    constexpr int width = 24;
    const int fill = int(width * done / std::max<int64_t>(steps_, 1));
    fmt::print(stderr, "\r\033[Kepoch {}/{} [{}{}] {}/{} loss {:.4f} acc {:.1f}% {:.0f} images/s",
               epoch_ + 1, epochs_, std::string(size_t(fill), '#'),
               std::string(size_t(width - fill), '.'), done, steps_, loss, 100 * acc, images_per_s);
    drawn_ = true;
  }
  void done() {
    if (drawn_) fmt::print(stderr, "\r\033[K");
    drawn_ = false;
  }
  ~EpochBar() { done(); }

private:
  int64_t epoch_, epochs_, steps_;
  bool active_, drawn_ = false;
  Clock::time_point last_;
};

// The fold factor of a model (its `fold` view's), 1 when it does not fold.
int64_t fold_factor(const Model& m) {
  for (const Node& n : m.nodes)
    if (n.op == OpKind::fold) return n.attrs.factor;
  return 1;
}

std::map<std::string, Tensor> read_params(Executor& ex, const Plan& plan) {
  std::map<std::string, Tensor> r;
  for (const ParamBinding& p : plan.params)
    r[p.name] = ex.read(p.buffer);
  return r;
}

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

void check_args(const TrainArgs& a) {
  auto finite_in = [](double v, double lo, double hi) {
    return std::isfinite(v) && v >= lo && v <= hi;
  };
  if (!finite_in(a.lr, 0, 1e6) || a.lr == 0)
    throw Error("", "--lr", cat("must be a positive number, got ", a.lr));
  if (!finite_in(a.momentum, 0, 1) || a.momentum >= 1)
    throw Error("", "--momentum", cat("must be in [0, 1), got ", a.momentum));
  if (a.momentum != 0 && a.optimizer != "sgd")
    throw Error("", "--momentum", "is SGD's (Adam keeps moments of its own: --betas)");
  if (!finite_in(a.weight_decay, 0, 1e6))
    throw Error("", "--weight-decay", cat("must be a number >= 0, got ", a.weight_decay));
  if (!finite_in(a.beta1, 0, 1) || a.beta1 >= 1 || !finite_in(a.beta2, 0, 1) || a.beta2 >= 1)
    throw Error("", "--betas", cat("must be in [0, 1), got ", a.beta1, " ", a.beta2));
  if (!finite_in(a.eps, 1e-30, 1)) throw Error("", "--eps", cat("must be in (0, 1], got ", a.eps));
  if (a.val_data.empty() != a.val_labels.empty())
    throw Error("", a.val_data.empty() ? "--val-labels" : "--val-data",
                "validation needs both --val-data and --val-labels");
  if (a.resume && a.overwrite)
    throw Error("", "--resume",
                "continues the checkpoint that --overwrite would replace: give one");
  if (a.resume && !a.weights.empty())
    throw Error("", "--weights",
                "sets the initial weights of a new run; --resume continues from the checkpoint's");
  a.plan.check(true);
  if (a.device == "cpu" && (a.plan.sparse != "auto" || !a.plan.profile.empty()))
    throw Error("", a.plan.sparse != "auto" ? "--sparse" : "--profile",
                "plans the generated kernels of --device emu or gpu; the cpu backend runs the "
                "reference of every layer");
}

void train(TrainArgs a) {
  const bool adam = a.optimizer == "adam";
  if (a.lr == 0) a.lr = adam ? 1e-3 : 1e-2; // torch.optim's defaults
  check_args(a);

  // Every input is read and checked before anything is written.
  const Dataset data = load_dataset(a.data, a.labels, a.distill);
  std::optional<Dataset> val;
  if (!a.val_data.empty()) val = load_dataset(a.val_data, a.val_labels);

  Model m = load_model_or_shipped(a.model.model);
  for (const Node& n : m.nodes)
    if (n.op == OpKind::batchnorm)
      throw Error(m.file, cat("layer \"", n.name, "\""),
                  "kiln train does not train batchnorm layers yet: its training plans use batch "
                  "statistics and do not update the running statistics inference reads");
  const int64_t f = fold_factor(m);
  int64_t batch = a.model.batch_given() ? a.model.batch : kDefaultBatch;
  if (batch < 1) throw Error("", "--batch", cat("must be at least 1, got ", batch));
  if (batch % f) {
    const int64_t rounded = (batch + f - 1) / f * f;
    fmt::print(stderr,
               "kiln: note: --batch {} rounded up to {}, a whole number of folds of {} images\n",
               batch, rounded, f);
    batch = rounded;
  }
  ModelOverrides ov = a.model.overrides();
  ov.batch = batch;
  const Shape& x = data.images.shape();
  if (!ov.image) ov.image = Int2{x[2], x[3]};
  apply_overrides(m, ov);
  if (m.input_shape.size() != 4)
    throw Error(m.file, "input", "kiln train feeds images: the model input must be [N, C, H, W]");
  const Shape& logits = m.nodes[size_t(m.outputs.at(0))].shape;
  if (logits.size() != 2)
    throw Error(m.file, "outputs",
                cat("kiln train trains classifiers: the first output must be [N, classes], not ",
                    shape_str(logits)));
  const int64_t classes = logits[1];
  check_dataset(data, m.input_shape[1], m.input_shape[2], m.input_shape[3], classes);
  if (val) check_dataset(*val, m.input_shape[1], m.input_shape[2], m.input_shape[3], classes);
  const int64_t n = data.size();
  if (batch > n)
    throw Error(a.data, "", cat("holds ", n, " images, fewer than one batch of ", batch));
  const int64_t steps = n / batch, dropped = n % batch;

  TrainRecipe recipe;
  recipe.optimizer = adam ? Optimizer::adam : Optimizer::sgd;
  recipe.momentum = a.momentum;
  recipe.weight_decay = a.weight_decay;
  recipe.beta1 = a.beta1, recipe.beta2 = a.beta2, recipe.eps = a.eps;
  recipe.loss = a.distill.empty() ? TrainLoss::cross_entropy : TrainLoss::mse;

  // What a resumed run must share with the checkpoint to continue it exactly.
  std::map<std::string, std::string> settings = {
      {"model_digest", content_hash(model_to_text(m))},
      {"recipe", recipe.key()},
      {"lr", fmt::format("{}", a.lr)},
      {"batch", std::to_string(batch)},
      {"seed", std::to_string(a.seed)},
      {"dtype", std::string(dtype_name(m.dtype))},
      {"data", data.digest()},
  };
  std::error_code ec;
  std::optional<Checkpoint> ckpt;
  if (a.resume) {
    ckpt = read_checkpoint(a.output);
    const std::string state = train_state_path(a.output);
    for (const auto& [key, want] : settings) {
      auto it = ckpt->meta.find(key);
      const std::string have = it == ckpt->meta.end() ? "(none)" : it->second;
      if (have != want)
        throw Error(state, key,
                    cat("the checkpoint's run has ", have, ", this one ", want,
                        " (--resume continues a run with its own model, data and settings; start "
                        "a new run from the weights with --weights to change them)"));
    }
    if (ckpt->epoch >= a.epochs)
      throw Error("", "--epochs",
                  cat(a.output, " has trained ", ckpt->epoch, " epochs already; --epochs ",
                      a.epochs,
                      " leaves nothing to do (--epochs counts every epoch, resumed "
                      "ones included)"));
  } else if (std::filesystem::exists(a.output, ec) && !a.overwrite) {
    throw Error(a.output, "",
                "exists: --resume continues its training, --overwrite starts a new run over it");
  }

  LowerOptions lo;
  lo.train = true;
  lo.lr = a.lr;
  lo.recipe = recipe;
  Device dev = make_device(m, a, lo);
  const Plan& plan = dev.plan;
  std::optional<Device> eval;
  if (val) eval = make_device(m, a, LowerOptions{});

  Executor ex(plan, *dev.backend);
  std::string run_id;
  int64_t first_epoch = 0, step = 0;
  if (ckpt) {
    bind_weights(ex, plan, ckpt->params, a.output);
    write_optimizer_state(ex, plan, ckpt->state, train_state_path(a.output));
    run_id = ckpt->meta["run"];
    first_epoch = ckpt->epoch;
    step = ckpt->step;
  } else {
    if (!a.weights.empty())
      bind_weights(ex, plan, io::read_safetensors(a.weights).tensors, a.weights);
    else if (const auto* w = model_file_weights(a.model.model)) // an ONNX model's own
      bind_weights(ex, plan, *w, a.model.model);
    else
      bind_seeded_weights(ex, plan, a.seed);
    zero_optimizer_state(ex, plan);
    run_id = content_hash(fmt::format("{} {} {} {}", m.name, getpid(),
                                      Clock::now().time_since_epoch().count(), a.output))
                 .substr(0, 16);
  }
  std::unique_ptr<Executor> eval_ex;
  if (eval) eval_ex = std::make_unique<Executor>(eval->plan, *eval->backend);

  const std::string what =
      recipe.loss == TrainLoss::mse ? "MSE against " + a.distill : std::string("cross-entropy");
  const std::string opt =
      adam ? fmt::format("adam lr {} betas {} {} eps {}", a.lr, a.beta1, a.beta2, a.eps)
           : fmt::format("sgd lr {}{}", a.lr,
                         a.momentum ? fmt::format(" momentum {}", a.momentum) : "");
  fmt::print("kiln train {}{} on {}: {} parameters; {} images [{}, {}, {}] in {} batches of {} "
             "per epoch; {}{}, {}{}\n",
             m.name, f > 1 ? fmt::format(" (folds {} images)", f) : "", a.device,
             with_commas(m.total_params()), n, x[1], x[2], x[3], steps, batch, opt,
             a.weight_decay ? fmt::format(" weight decay {}", a.weight_decay) : "", what,
             dev.note.empty() ? "" : "; " + dev.note);
  if (dropped)
    fmt::print("each epoch leaves out {} of the {} images (the last partial batch, a different "
               "random {} every epoch)\n",
               dropped, n, dropped);
  if (ckpt) fmt::print("resuming {} after epoch {} ({} updates)\n", a.output, first_epoch, step);
  std::fflush(stdout);

  const Clock::time_point start = Clock::now();
  double best = -1;
  int64_t best_epoch = 0;
  for (int64_t epoch = first_epoch; epoch < a.epochs; ++epoch) {
    const std::vector<int64_t> order = epoch_order(n, a.seed, epoch);
    EpochBar bar(epoch, a.epochs, steps);
    double loss_sum = 0, train_seconds = 0;
    int64_t correct = 0;
    for (int64_t s = 0; s < steps; ++s) {
      const auto samples = std::span(order).subspan(size_t(s * batch), size_t(batch));
      const Tensor labels = gather_labels(data, samples, batch);
      const Clock::time_point t0 = Clock::now();
      ex.write(plan.inputs[0], gather_images(data, samples, batch));
      ex.write(plan.target,
               recipe.loss == TrainLoss::mse ? gather_teacher(data, samples, batch) : labels);
      ex.run("forward");
      ex.run("backward");
      set_optimizer_step(ex, plan, ++step);
      ex.run("update");
      const double loss = ex.read(plan.loss).get(0);
      const Tensor out = ex.read(plan.outputs[0]);
      train_seconds += seconds_since(t0);
      loss_sum += loss;
      correct += count_correct(out, labels.as<int64_t>(), batch);
      bar.update(s + 1, loss_sum / double(s + 1), double(correct) / double((s + 1) * batch),
                 double((s + 1) * batch) / train_seconds);
    }
    bar.done();
    const double loss = loss_sum / double(steps);
    if (!std::isfinite(loss))
      throw Error("", "--lr",
                  cat("the training loss diverged (", loss, ") in epoch ", epoch + 1,
                      "; the last checkpoint is kept. A smaller --lr may help"));
    std::map<std::string, Tensor> params = read_params(ex, plan);
    std::string val_note;
    if (val) {
      bind_weights(*eval_ex, eval->plan, params, "the trained parameters");
      int64_t right = 0;
      std::vector<int64_t> samples;
      for (int64_t at = 0; at < val->size(); at += batch) {
        const int64_t rows = std::min(batch, val->size() - at);
        samples.resize(size_t(rows));
        for (int64_t i = 0; i < rows; ++i)
          samples[size_t(i)] = at + i;
        eval_ex->write(eval->plan.inputs[0], gather_images(*val, samples, batch));
        eval_ex->run("forward");
        const Tensor labels = gather_labels(*val, samples, batch);
        right += count_correct(eval_ex->read(eval->plan.outputs[0]), labels.as<int64_t>(), rows);
      }
      const double acc = double(right) / double(val->size());
      if (acc > best) best = acc, best_epoch = epoch + 1;
      val_note = fmt::format(", val acc {:.2f}%", 100 * acc);
    }
    Checkpoint c;
    c.params = std::move(params);
    c.state = read_optimizer_state(ex, plan);
    c.meta = settings;
    c.meta["kiln"] = KILN_VERSION;
    c.meta["model"] = m.name;
    c.meta["run"] = run_id;
    c.meta["images"] = std::to_string(n);
    c.epoch = epoch + 1;
    c.step = step;
    write_checkpoint(a.output, c);
    fmt::print("epoch {}/{}: loss {:.4f}, train acc {:.2f}%{}, {:.0f} images/s ({:.1f} s)\n",
               epoch + 1, a.epochs, loss, 100.0 * double(correct) / double(steps * batch), val_note,
               double(steps * batch) / train_seconds, train_seconds);
    std::fflush(stdout);
  }
  fmt::print("trained {} epochs in {:.1f} s{}; wrote {} and {}\n", a.epochs - first_epoch,
             seconds_since(start),
             best >= 0 ? fmt::format(", best val acc {:.2f}% (epoch {})", 100 * best, best_epoch)
                       : "",
             a.output, train_state_path(a.output));
}

} // namespace

void add_train(CLI::App& app) {
  auto a = std::make_shared<TrainArgs>();
  CLI::App* cmd = app.add_subcommand(
      "train",
      "train a classifier over a dataset: shuffled minibatches, each one training step of the "
      "generated plan (forward, loss, backward, optimizer update) on the chosen backend, with "
      "parameters and optimizer state kept on it; validation and an atomic checkpoint every "
      "epoch.\nExample: kiln train noscope_coral --image 32x32 --data x.npy --labels y.npy "
      "--val-data xv.npy --val-labels yv.npy --epochs 10 --batch 32 --optimizer adam -o "
      "w.safetensors");
  a->model.add_to(cmd);
  cmd->get_option("--batch")->description(
      "minibatch size (default 32): the training plan's batch. A folded model's is rounded up to "
      "a whole number of folds. Each epoch leaves out the last partial batch (N mod batch images, "
      "different ones every epoch: the order is reshuffled)");
  cmd->get_option("--image")->description(
      "image size HxW the model is built for (default: the data's; they must agree)");
  cmd->add_option("--data", a->data, "training images, .npy [N, C, H, W] (f16 or f32)")->required();
  cmd->add_option("--labels", a->labels, "their classes, .npy [N] int64 or int32")->required();
  cmd->add_option("--val-data", a->val_data,
                  "validation images, .npy [M, C, H, W]: accuracy after every epoch");
  cmd->add_option("--val-labels", a->val_labels, "their classes, .npy [M] int64 or int32");
  cmd->add_option("--distill", a->distill,
                  "a teacher's logits for the training images, .npy [N, classes] floats: the loss "
                  "becomes their mean squared error (FoldedCNNs' distillation) instead of "
                  "cross-entropy; --labels still give the accuracy");
  cmd->add_option("--epochs", a->epochs, "epochs in all, resumed ones included (default 10)")
      ->check(CLI::Range(int64_t(1), int64_t(1000000)));
  cmd->add_option("--optimizer", a->optimizer,
                  "sgd (default) or adam, computed as torch.optim.SGD / torch.optim.Adam")
      ->check(CLI::IsMember({"sgd", "adam"}));
  cmd->add_option("--lr", a->lr, "learning rate (default 0.01 for sgd, 0.001 for adam)");
  cmd->add_option("--momentum", a->momentum, "sgd: momentum in [0, 1) (default 0)");
  cmd->add_option("--weight-decay", a->weight_decay,
                  "L2 penalty added to every gradient: grad + wd * param (default 0; adam adds it "
                  "to the gradient like torch.optim.Adam, not decoupled like AdamW)");
  auto* betas =
      cmd->add_option("--betas", "adam: the moments' decay rates (default 0.9 0.999)")->expected(2);
  cmd->add_option("--eps", a->eps, "adam: added to the denominator (default 1e-8)");
  cmd->add_option("--device", a->device,
                  "backend: cpu (the reference, default), emu (the generated kernels on the CPU "
                  "emulator), gpu")
      ->check(CLI::IsMember({"cpu", "emu", "gpu"}));
  cmd->add_option("--gpu", a->gpu,
                  "descriptor the kernels (emu, gpu) and schedules are made for (default h200)");
  cmd->add_option("--weights", a->weights,
                  "initial parameters (.safetensors, PyTorch state_dict names); default: seeded");
  cmd->add_option(
      "--seed", a->seed,
      "seed of the initial weights (without --weights) and of the shuffling (default 0)");
  cmd->add_option("-o,--output", a->output,
                  "checkpoint written every epoch: W.safetensors (the parameters) and beside it "
                  "W.train.safetensors (optimizer state, epoch, settings), both atomically")
      ->required();
  cmd->add_flag("--resume", a->resume,
                "continue the run whose checkpoint is -o, exactly where it stopped (same "
                "shuffling, optimizer state and updates as an uninterrupted run)");
  cmd->add_flag("--overwrite", a->overwrite, "start a new run over an existing -o checkpoint");
  a->plan.add_to(cmd);
  cmd->callback([a, betas] {
    if (betas->count()) {
      const auto v = betas->as<std::vector<double>>();
      a->beta1 = v[0], a->beta2 = v[1];
    }
    train(*a);
  });
}

} // namespace kiln::cli
