// Lowers a model to a plan: the forward pass (inference), or a training step under the
// store-all schedule (schedule/training_graph: forward, the loss (softmax cross-entropy on
// the first output's logits), backward, SGD update). Steps are `reference` steps; kernel
// selection refines the plan later.
#pragma once

#include "generator/model/model.hpp"
#include "runtime/plan.hpp"

#include <string>

namespace kiln {

struct TiledSegment;

struct LowerOptions {
  bool train = false;
  double lr = 0.01;
  std::string gpu; // descriptor identity, empty for reference plans
  // Run this segment tile by tile (segmented fused tiling); its tiling must be set.
  const TiledSegment* tiled = nullptr;
};

Plan lower_model(const Model& m, const LowerOptions& o);
// The same before finish_plan: for passes that rewrite steps first.
Plan lower_model_steps(const Model& m, const LowerOptions& o);

// Buffer names: the model input, node activations and gradients, parameters.
std::string input_buffer_name(const Model& m);
std::string act_name(const std::string& node);
std::string dact_name(const std::string& node);
std::string param_buffer_name(const std::string& param);
std::string grad_buffer_name(const std::string& param);

} // namespace kiln
