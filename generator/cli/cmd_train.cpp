// kiln train: the options of the training loop (generator/train/trainer.hpp) and what it
// prints: what the run is, a progress bar per epoch on a terminal, a line per epoch and a
// summary.
#include "generator/cli/commands.hpp"
#include "generator/cli/format.hpp"
#include "generator/cli/model_args.hpp"
#include "generator/cli/plan_args.hpp"
#include "generator/train/checkpoint.hpp"
#include "generator/train/trainer.hpp"
#include "runtime/progress.hpp"

#include <fmt/format.h>

namespace kiln::cli {

namespace {

struct TrainArgs {
  ModelArgs model;
  std::string data, labels, val_data, val_labels, distill;
  int64_t epochs = 10;
  std::string optimizer = "sgd";
  double lr = 0; // 0: the optimizer's default
  double momentum = 0, weight_decay = 0, beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  std::string device = "cpu", gpu = "auto";
  std::string weights;
  uint64_t seed = 0;
  std::string output;
  bool resume = false, overwrite = false;
  PlanArgs plan;
};

constexpr int64_t kDefaultBatch = 32;

// The training plan's schedule, for the first line.
std::string schedule_note(const std::optional<ScheduleChoice>& c, const std::string& device) {
  if (!c) return "";
  if (device != "cpu")
    return fmt::format("schedule {}{}", c->strategy,
                       c->budget.empty() ? "" : " within " + c->budget);
  if (c->strategy == "tiled")
    return fmt::format("schedule tiled: {} tiles, rest {} (plan peak {})", c->tiles, c->rest,
                       human_bytes(c->peak_bytes));
  return fmt::format("schedule {} within {} (predicted peak {})", c->strategy,
                     human_bytes(c->budget_bytes), human_bytes(c->peak_bytes));
}

// While an epoch trains, a bar on stderr; after it, its line on stdout.
class Report : public TrainObserver {
public:
  void step(const TrainProgress& p) override {
    if (p.step == p.steps) return line_.clear();
    line_.draw([&] {
      return fmt::format("epoch {}/{} {} {}/{} loss {:.4f} acc {:.1f}% {:.0f} images/s",
                         p.epoch + 1, p.epochs, ProgressLine::bar(size_t(p.step), size_t(p.steps)),
                         p.step, p.steps, p.loss, 100 * p.accuracy, p.images_per_s);
    });
  }
  void epoch(const EpochResult& e) override {
    fmt::print("epoch {}/{}: loss {:.4f}, train acc {:.2f}%{}, {:.0f} images/s ({:.1f} s)\n",
               e.epoch, e.epochs, e.loss, 100.0 * e.accuracy,
               e.val_accuracy ? fmt::format(", val acc {:.2f}%", 100 * *e.val_accuracy) : "",
               e.images_per_s, e.seconds);
    std::fflush(stdout);
  }

private:
  ProgressLine line_;
};

void train(const TrainArgs& a) {
  TrainOptions o;
  o.model = a.model.model;
  o.data = a.data, o.labels = a.labels, o.val_data = a.val_data, o.val_labels = a.val_labels;
  o.distill = a.distill;
  o.epochs = a.epochs;
  o.batch = a.model.batch_given() ? a.model.batch : kDefaultBatch;
  o.recipe.optimizer = a.optimizer == "adam" ? Optimizer::adam : Optimizer::sgd;
  o.recipe.momentum = a.momentum;
  o.recipe.weight_decay = a.weight_decay;
  o.recipe.beta1 = a.beta1, o.recipe.beta2 = a.beta2, o.recipe.eps = a.eps;
  o.lr = a.lr;
  o.device = a.device, o.gpu = a.gpu;
  o.weights = a.weights;
  o.seed = a.seed;
  o.output = a.output;
  o.resume = a.resume, o.overwrite = a.overwrite;
  o.progress = ProgressLine::stderr_is_terminal();
  check_train_options(o);
  a.plan.check(true);
  a.plan.check_device(a.device);
  o.overrides = a.model.overrides();
  o.plan.train = true;
  a.plan.apply(o.plan);

  Trainer trainer(o);
  const TrainSetup& u = trainer.setup();
  const Model& m = u.model;
  if (u.batch != u.batch_asked)
    fmt::print(stderr,
               "kiln: note: --batch {} rounded up to {}, a whole number of folds of {} images\n",
               u.batch_asked, u.batch, u.fold);
  const TrainRecipe& r = u.recipe;
  const std::string what =
      r.loss == TrainLoss::mse ? "MSE against " + a.distill : std::string("cross-entropy");
  const std::string opt =
      r.optimizer == Optimizer::adam
          ? fmt::format("adam lr {} betas {} {} eps {}", u.lr, r.beta1, r.beta2, r.eps)
          : fmt::format("sgd lr {}{}", u.lr,
                        r.momentum ? fmt::format(" momentum {}", r.momentum) : "");
  const std::string note = schedule_note(u.schedule, a.device);
  // One sample's shape as the data holds it: [C, H, W], or a signal's [C, L].
  Shape sample = caller_input_shape(m);
  sample.erase(sample.begin());
  fmt::print("kiln train {}{} on {}: {} parameters; {} {} {} in {} batches of {} "
             "per epoch; {}{}, {}{}\n",
             m.name, u.fold > 1 ? fmt::format(" (folds {} images)", u.fold) : "", a.device,
             with_commas(m.total_params()), u.images, m.signal ? "signals" : "images",
             shape_str(sample), u.steps, u.batch, opt,
             r.weight_decay ? fmt::format(" weight decay {}", r.weight_decay) : "", what,
             note.empty() ? "" : "; " + note);
  if (u.dropped)
    fmt::print("each epoch leaves out {} of the {} images (the last partial batch, a different "
               "random {} every epoch)\n",
               u.dropped, u.images, u.dropped);
  if (u.resumed)
    fmt::print("resuming {} after epoch {} ({} updates)\n", a.output, u.first_epoch, u.first_step);
  std::fflush(stdout);

  Report report;
  const TrainResult t = trainer.run(&report);
  fmt::print("trained {} epochs in {:.1f} s{}; wrote {} and {}\n", t.epochs, t.seconds,
             t.best_val_accuracy ? fmt::format(", best val acc {:.2f}% (epoch {})",
                                               100 * *t.best_val_accuracy, t.best_epoch)
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
      "image size HxW the model is built for (a 1-D signal model's: L or Lx1; default: the "
      "data's; they must agree)");
  cmd->add_option("--data", a->data,
                  "training images, .npy [N, C, H, W] (f16 or f32); a 1-D signal model's: "
                  "[N, C, L] (or [N, C, L, 1])")
      ->required();
  cmd->add_option("--labels", a->labels, "their classes, .npy [N] int64 or int32")->required();
  cmd->add_option("--val-data", a->val_data,
                  "validation images, .npy [M, C, H, W] ([M, C, L] for a 1-D signal model): "
                  "accuracy after every epoch");
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
                  "descriptor the kernels (emu, gpu) and schedules are made for: auto (default: "
                  "the live GPU with --device gpu, else h200), a kiln-gpu/1 file or a shipped "
                  "name");
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
