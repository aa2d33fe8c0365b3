#include "generator/train/trainer.hpp"
#include "generator/gpu/detect.hpp"

#include "generator/compile/cache.hpp"
#include "generator/model/model_json.hpp"
#include "generator/run/model_input.hpp"
#include "generator/run/model_source.hpp"
#include "generator/train/checkpoint.hpp"
#include "generator/train/dataset.hpp"
#include "runtime/error.hpp"
#include "runtime/executor.hpp"
#include "runtime/io/safetensors.hpp"
#include "runtime/optimizer_state.hpp"
#include "runtime/weights.hpp"

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <map>
#include <unistd.h>

namespace kiln {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double default_lr(const TrainRecipe& r) {
  return r.optimizer == Optimizer::adam ? 1e-3 : 1e-2; // torch.optim's defaults
}

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

} // namespace

void check_train_options(const TrainOptions& o) {
  auto finite_in = [](double v, double lo, double hi) {
    return std::isfinite(v) && v >= lo && v <= hi;
  };
  const TrainRecipe& r = o.recipe;
  const double lr = o.lr == 0 ? default_lr(r) : o.lr;
  if (!finite_in(lr, 0, 1e6) || lr == 0)
    throw Error("", "--lr", cat("must be a positive number, got ", lr));
  if (!finite_in(r.momentum, 0, 1) || r.momentum >= 1)
    throw Error("", "--momentum", cat("must be in [0, 1), got ", r.momentum));
  if (r.momentum != 0 && r.optimizer != Optimizer::sgd)
    throw Error("", "--momentum", "is SGD's (Adam keeps moments of its own: --betas)");
  if (!finite_in(r.weight_decay, 0, 1e6))
    throw Error("", "--weight-decay", cat("must be a number >= 0, got ", r.weight_decay));
  if (!finite_in(r.beta1, 0, 1) || r.beta1 >= 1 || !finite_in(r.beta2, 0, 1) || r.beta2 >= 1)
    throw Error("", "--betas", cat("must be in [0, 1), got ", r.beta1, " ", r.beta2));
  if (!finite_in(r.eps, 1e-30, 1)) throw Error("", "--eps", cat("must be in (0, 1], got ", r.eps));
  if (o.val_data.empty() != o.val_labels.empty())
    throw Error("", o.val_data.empty() ? "--val-labels" : "--val-data",
                "validation needs both --val-data and --val-labels");
  if (o.resume && o.overwrite)
    throw Error("", "--resume",
                "continues the checkpoint that --overwrite would replace: give one");
  if (o.resume && !o.weights.empty())
    throw Error("", "--weights",
                "sets the initial weights of a new run; --resume continues from the checkpoint's");
  if (o.batch < 1) throw Error("", "--batch", cat("must be at least 1, got ", o.batch));
}

struct Trainer::State {
  TrainOptions o;
  TrainSetup setup;
  Dataset data;
  std::optional<Dataset> val;
  std::map<std::string, std::string> settings; // what a resumed run must share
  std::string run_id;
  DevicePlan train, eval;
  std::unique_ptr<Executor> ex, eval_ex;
};

Trainer::Trainer(TrainOptions o) : s_(std::make_unique<State>()) {
  State& s = *s_;
  TrainSetup& u = s.setup;
  check_train_options(o);
  u.lr = o.lr == 0 ? default_lr(o.recipe) : o.lr;
  u.recipe = o.recipe;
  u.recipe.loss = o.distill.empty() ? TrainLoss::cross_entropy : TrainLoss::mse;

  // Every input is read and checked before anything is written.
  s.data = load_dataset(o.data, o.labels, o.distill);
  if (!o.val_data.empty()) s.val = load_dataset(o.val_data, o.val_labels);
  Model m = load_model_or_shipped(o.model);
  for (const Node& n : m.nodes)
    if (n.op == OpKind::batchnorm)
      throw Error(m.file, cat("layer \"", n.name, "\""),
                  "kiln train does not train batchnorm layers yet: its training plans use batch "
                  "statistics and do not update the running statistics inference reads");
  // A signal model's [N, C, L] data is held as its input is, [N, C, L, 1].
  hold_as_model_input(s.data, m.signal);
  if (s.val) hold_as_model_input(*s.val, m.signal);
  u.fold = fold_factor(m);
  u.batch_asked = o.batch;
  u.batch = (o.batch + u.fold - 1) / u.fold * u.fold;
  ModelOverrides ov = o.overrides;
  ov.batch = u.batch;
  const Shape& x = s.data.images.shape();
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
  const Shape& in = m.input_shape;
  check_dataset(s.data, in[1], in[2], in[3], classes, m.signal);
  if (s.val) check_dataset(*s.val, in[1], in[2], in[3], classes, m.signal);
  u.images = s.data.size();
  if (u.batch > u.images)
    throw Error(o.data, "", cat("holds ", u.images, " images, fewer than one batch of ", u.batch));
  u.steps = u.images / u.batch, u.dropped = u.images % u.batch;

  s.settings = {
      {"model_digest", content_hash(model_to_text(m))},
      {"recipe", u.recipe.key()},
      {"lr", fmt::format("{}", u.lr)},
      {"batch", std::to_string(u.batch)},
      {"seed", std::to_string(o.seed)},
      {"dtype", std::string(dtype_name(m.dtype))},
      {"data", s.data.digest()},
  };
  std::error_code ec;
  std::optional<Checkpoint> ckpt;
  if (o.resume) {
    ckpt = read_checkpoint(o.output);
    const std::string state = train_state_path(o.output);
    for (const auto& [key, want] : s.settings) {
      auto it = ckpt->meta.find(key);
      const std::string have = it == ckpt->meta.end() ? "(none)" : it->second;
      if (have != want)
        throw Error(state, key,
                    cat("the checkpoint's run has ", have, ", this one ", want,
                        " (--resume continues a run with its own model, data and settings; start "
                        "a new run from the weights with --weights to change them)"));
    }
    if (ckpt->epoch >= o.epochs)
      throw Error("", "--epochs",
                  cat(o.output, " has trained ", ckpt->epoch, " epochs already; --epochs ",
                      o.epochs,
                      " leaves nothing to do (--epochs counts every epoch, resumed "
                      "ones included)"));
  } else if (std::filesystem::exists(o.output, ec) && !o.overwrite) {
    throw Error(o.output, "",
                "exists: --resume continues its training, --overwrite starts a new run over it");
  }

  // The training step's plan and, for validation, an unscheduled inference plan.
  DevicePlanOptions dp;
  dp.device = o.device;
  dp.progress = o.progress;
  dp.generate = o.plan;
  dp.generate.train = true;
  dp.generate.lr = u.lr;
  dp.generate.recipe = u.recipe;
  const bool needs_gpu = o.device != "cpu" || is_scheduled(dp.generate);
  if (needs_gpu) dp.gpu = gpu_for_device(o.gpu, o.device);
  s.train = make_device_plan(m, dp);
  u.schedule = s.train.schedule;
  if (s.val) {
    const GenerateOptions plain;
    dp.generate.train = false;
    dp.generate.lr = plain.lr;
    dp.generate.recipe = plain.recipe;
    dp.generate.schedule = plain.schedule, dp.generate.budget = plain.budget;
    dp.generate.tiles = plain.tiles, dp.generate.slots = plain.slots;
    s.eval = make_device_plan(m, dp);
  }

  const Plan& plan = s.train.plan;
  s.ex = std::make_unique<Executor>(plan, *s.train.backend);
  if (ckpt) {
    bind_weights(*s.ex, plan, ckpt->params, o.output);
    write_optimizer_state(*s.ex, plan, ckpt->state, train_state_path(o.output));
    s.run_id = ckpt->meta["run"];
    u.resumed = true;
    u.first_epoch = ckpt->epoch;
    u.first_step = ckpt->step;
  } else {
    bind_initial_weights(*s.ex, plan, o.weights, o.model, o.seed);
    zero_optimizer_state(*s.ex, plan);
    s.run_id = content_hash(fmt::format("{} {} {} {}", m.name, getpid(),
                                        Clock::now().time_since_epoch().count(), o.output))
                   .substr(0, 16);
  }
  if (s.val) s.eval_ex = std::make_unique<Executor>(s.eval.plan, *s.eval.backend);
  u.model = std::move(m);
  s.o = std::move(o);
}

Trainer::~Trainer() = default;

const TrainSetup& Trainer::setup() const { return s_->setup; }

namespace {

// The fraction of a validation set the model classifies right, a batch at a time.
double validate(Executor& ex, const Plan& plan, const Dataset& val, int64_t batch) {
  int64_t right = 0;
  std::vector<int64_t> samples;
  for (int64_t at = 0; at < val.size(); at += batch) {
    const int64_t rows = std::min(batch, val.size() - at);
    samples.resize(size_t(rows));
    for (int64_t i = 0; i < rows; ++i)
      samples[size_t(i)] = at + i;
    ex.write(plan.inputs[0], gather_images(val, samples, batch));
    ex.run("forward");
    const Tensor labels = gather_labels(val, samples, batch);
    right += count_correct(ex.read(plan.outputs[0]), labels.as<int64_t>(), rows);
  }
  return double(right) / double(val.size());
}

} // namespace

TrainResult Trainer::run(TrainObserver* observer) {
  State& s = *s_;
  const TrainSetup& u = s.setup;
  const TrainOptions& o = s.o;
  const Plan& plan = s.train.plan;
  Executor& ex = *s.ex;
  TrainObserver none;
  TrainObserver& obs = observer ? *observer : none;
  const int64_t batch = u.batch, steps = u.steps;
  const Clock::time_point start = Clock::now();
  TrainResult result;
  int64_t step = u.first_step;
  for (int64_t epoch = u.first_epoch; epoch < o.epochs; ++epoch) {
    const std::vector<int64_t> order = epoch_order(u.images, o.seed, epoch);
    double loss_sum = 0, train_seconds = 0;
    int64_t correct = 0;
    for (int64_t st = 0; st < steps; ++st) {
      const auto samples = std::span(order).subspan(size_t(st * batch), size_t(batch));
      const Tensor labels = gather_labels(s.data, samples, batch);
      const Clock::time_point t0 = Clock::now();
      ex.write(plan.inputs[0], gather_images(s.data, samples, batch));
      ex.write(plan.target,
               u.recipe.loss == TrainLoss::mse ? gather_teacher(s.data, samples, batch) : labels);
      ex.run("forward");
      ex.run("backward");
      set_optimizer_step(ex, plan, ++step);
      ex.run("update");
      const double loss = ex.read(plan.loss).get(0);
      const Tensor out = ex.read(plan.outputs[0]);
      train_seconds += seconds_since(t0);
      loss_sum += loss;
      correct += count_correct(out, labels.as<int64_t>(), batch);
      obs.step({epoch, o.epochs, st + 1, steps, loss_sum / double(st + 1),
                double(correct) / double((st + 1) * batch),
                double((st + 1) * batch) / train_seconds});
    }
    EpochResult e;
    e.epoch = epoch + 1, e.epochs = o.epochs;
    e.loss = loss_sum / double(steps);
    if (!std::isfinite(e.loss))
      throw Error("", "--lr",
                  cat("the training loss diverged (", e.loss, ") in epoch ", epoch + 1,
                      "; the last checkpoint is kept. A smaller --lr may help"));
    std::map<std::string, Tensor> params = read_params(ex, plan);
    if (s.val) {
      bind_weights(*s.eval_ex, s.eval.plan, params, "the trained parameters");
      e.val_accuracy = validate(*s.eval_ex, s.eval.plan, *s.val, batch);
      if (!result.best_val_accuracy || *e.val_accuracy > *result.best_val_accuracy)
        result.best_val_accuracy = e.val_accuracy, result.best_epoch = epoch + 1;
    }
    Checkpoint c;
    c.params = std::move(params);
    c.state = read_optimizer_state(ex, plan);
    c.meta = s.settings;
    c.meta["kiln"] = KILN_VERSION;
    c.meta["model"] = u.model.name;
    c.meta["run"] = s.run_id;
    c.meta["images"] = std::to_string(u.images);
    c.epoch = epoch + 1;
    c.step = step;
    write_checkpoint(o.output, c);
    e.accuracy = double(correct) / double(steps * batch);
    e.images_per_s = double(steps * batch) / train_seconds;
    e.seconds = train_seconds;
    obs.epoch(e);
    ++result.epochs;
  }
  result.seconds = seconds_since(start);
  return result;
}

} // namespace kiln
