// The training loop of kiln train, for any caller: many training steps over a dataset. Each
// minibatch runs the generated plan of one training step (forward, loss, backward, the
// optimizer's update phase) on the chosen backend; parameters and optimizer state stay in
// the plan's arena between steps. Every epoch ends with a validation pass (an inference plan
// with the same batch) and a checkpoint written atomically (checkpoint.hpp), from which
// `resume` continues bit for bit. Progress and results go to an observer; the loop prints
// nothing.
#pragma once

#include "generator/emit/generate.hpp"
#include "generator/model/model.hpp"
#include "generator/model/overrides.hpp"
#include "generator/run/device_plan.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace kiln {

struct TrainOptions {
  std::string model; // a file (kiln-model/1, ONNX) or a shipped model's name
  // The datasets (dataset.hpp): images and labels, a validation set (optional), a
  // teacher's logits (optional: distillation, the loss becomes their mean squared error).
  std::string data, labels, val_data, val_labels, distill;
  int64_t epochs = 10;      // in all, resumed ones included
  int64_t batch = 32;       // rounded up to a whole number of folds for a folded model
  ModelOverrides overrides; // image (default: the data's) and dtype; the batch is `batch`
  // The optimizer and its hyperparameters (its loss follows from `distill`); lr 0 is the
  // optimizer's default (torch.optim's: sgd 0.01, adam 0.001).
  TrainRecipe recipe;
  double lr = 0;
  std::string device = "cpu"; // cpu, emu or gpu
  std::string gpu = "auto";   // the descriptor kernels and schedules are made for (gpu_for_device)
  // The training step's plan (device_plan.hpp): schedule, budget, tiles, slots; kernels.
  GenerateOptions plan;
  std::string
      weights;       // initial parameters (.safetensors); default: an ONNX model's own, else seeded
  uint64_t seed = 0; // of the seeded weights and of the shuffling
  std::string output; // the checkpoint: W.safetensors and W.train.safetensors
  bool resume = false, overwrite = false;
  bool progress = false; // the compile's progress line
};

// What a run is, once every input is read and checked.
struct TrainSetup {
  Model model;             // with its batch and image size
  int64_t fold = 1;        // images folded into one input (FoldedCNNs)
  int64_t batch = 0;       // minibatch size
  int64_t batch_asked = 0; // before rounding up to whole folds
  int64_t images = 0;      // in the training set
  int64_t steps = 0;       // minibatches per epoch
  int64_t dropped = 0;     // images each epoch leaves out (the last partial batch)
  double lr = 0;
  TrainRecipe recipe;
  std::optional<ScheduleChoice> schedule; // the training plan's
  bool resumed = false;
  int64_t first_epoch = 0, first_step = 0; // where a resumed run continues
};

// After each minibatch: the epoch's running means.
struct TrainProgress {
  int64_t epoch = 0, epochs = 0; // epoch from 0
  int64_t step = 0, steps = 0;   // minibatches done
  double loss = 0, accuracy = 0, images_per_s = 0;
};

// After each epoch, once its checkpoint is written.
struct EpochResult {
  int64_t epoch = 0, epochs = 0; // epoch from 1
  double loss = 0, accuracy = 0;
  std::optional<double> val_accuracy;
  double images_per_s = 0, seconds = 0; // of the training steps
};

struct TrainResult {
  int64_t epochs = 0; // trained by this run
  double seconds = 0;
  std::optional<double> best_val_accuracy;
  int64_t best_epoch = 0;
};

class TrainObserver {
public:
  virtual ~TrainObserver() = default;
  virtual void step(const TrainProgress&) {}
  virtual void epoch(const EpochResult&) {}
};

class Trainer {
public:
  // Reads and checks every input (options, data, model, the checkpoint to resume), makes the
  // plans and binds the initial parameters. Writes nothing; a bad input is a kiln::Error
  // naming the option or file.
  explicit Trainer(TrainOptions o);
  ~Trainer();
  const TrainSetup& setup() const;
  // The epochs left; the loss diverging is a kiln::Error (the last checkpoint is kept).
  TrainResult run(TrainObserver* observer = nullptr);

private:
  struct State;
  std::unique_ptr<State> s_;
};

// The checks of the hyperparameters and option combinations, also run by Trainer.
void check_train_options(const TrainOptions& o);

} // namespace kiln
