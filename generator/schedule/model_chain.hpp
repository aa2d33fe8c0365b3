// The chain problem of a model (what rotor and sqrt schedule): stages cut where exactly one
// value crosses — every layer of a sequential model, a residual block of a ResNet, a dense
// block or transition of a DenseNet — merged into at most `max_stages`. Stage sizes come
// from simulating the stage's training ops (the same ops `TrainingGraph::lower` emits), so a
// schedule's predicted peak bounds what the plan really holds live.
#pragma once

#include "generator/lower/training_graph.hpp"
#include "schedules/chain.hpp"
#include "schedules/chain_schedule.hpp"

#include <vector>

namespace kiln {

struct ModelChain {
  sched::Chain chain;
  std::vector<std::pair<int, int>> stages;     // node ranges [first, last]
  std::vector<std::vector<int>> forward_ops;  // per stage: F ops (and L in the last)
  std::vector<std::vector<int>> backward_ops; // per stage: G and W ops
};

ModelChain model_chain(const TrainingGraph& g, const std::vector<double>& op_times, int max_stages = 256);

// The training-op sequence of a chain schedule (frees are implied by last uses).
std::vector<int> chain_ops_order(const ModelChain& c, const std::vector<sched::ChainOp>& ops);

} // namespace kiln
