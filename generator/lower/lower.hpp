// Lowers a model to a plan: the forward pass (inference), or a training step under the
// store-all schedule (schedule/training_graph: forward, the loss on the first output's
// logits (softmax cross-entropy, or MSE against a teacher's), backward, the optimizer's
// update). Steps are `reference` steps; kernel
// selection refines the plan later.
#pragma once

#include "generator/lower/steps.hpp"
#include "generator/model/model.hpp"
#include "runtime/plan.hpp"

#include <string>

namespace kiln {

struct TiledSegment;

// How a training step learns: its loss and the update phase's optimizer (the formulas:
// runtime/step_fn.hpp's sgd.update, adam.update, mse.forward).
enum class Optimizer { sgd, adam };
enum class TrainLoss {
  cross_entropy, // softmax cross-entropy against integer classes (i64 targets)
  mse,           // mean squared error against a teacher's logits (float targets, distillation)
};
struct TrainRecipe {
  Optimizer optimizer = Optimizer::sgd;
  double momentum = 0;                           // sgd: with a velocity per parameter when nonzero
  double weight_decay = 0;                       // sgd and adam: added to the gradient
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8; // adam
  TrainLoss loss = TrainLoss::cross_entropy;
  // Everything above as text, for cache keys and messages ("sgd momentum 0 ...").
  std::string key() const;
};

struct LowerOptions {
  bool train = false;
  double lr = 0.01;
  TrainRecipe recipe;
  std::string gpu; // descriptor identity, empty for reference plans
  // Run this segment tile by tile (segmented fused tiling); its tiling must be set.
  const TiledSegment* tiled = nullptr;
};

Plan lower_model(const Model& m, const LowerOptions& o);
// The same before finish_plan: for passes that rewrite steps first.
Plan lower_model_steps(const Model& m, const LowerOptions& o);

} // namespace kiln
