// A training step as a graph of ops, the one definition every schedule strategy executes:
//   F n  the forward of node n (training mode; views have none: they alias their base),
//   L    the loss of the first output's logits (softmax cross-entropy against classes, or
//        MSE against a teacher's logits: LowerOptions::recipe),
//   G v  the gradient of value v (node v's output), the sum of the contributions of v's
//        consumers (and of the loss) in a fixed order,
//   W n  the gradients of node n's parameters.
// A schedule is a sequence of ops; an op may repeat (a recomputation). `lower` turns any
// such sequence into plan steps: every execution writes fresh buffers and every read uses
// the latest, so buffers die after their last use and recomputed values are bit-identical.
// Gradients never repeat, and contributions keep one order, so every schedule produces
// bit-identical gradients. The plan's update phase applies the recipe's optimizer to every
// trained parameter.
#pragma once

#include "generator/lower/lower.hpp"
#include "generator/model/model.hpp"
#include "runtime/plan.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace kiln {

struct TrainOp {
  // tiled_forward / tiled_backward: a tiled segment (LowerOptions::tiled), all its layers'
  // forwards, or its backward with every tile recomputed (their `node` is the segment's output).
  enum Kind { forward, loss, gradient, param_grad, tiled_forward, tiled_backward } kind = forward;
  int node = -1;            // F, G (the value's node), W
  std::vector<int> inputs;  // ops whose transient outputs this op reads
  int64_t output_bytes = 0; // transient bytes it creates
  int64_t temp_bytes = 0;   // transient bytes only while it runs
  std::string name;         // "F conv1", "G layer1.0.add", "W fc", "L"
};

class TrainingGraph {
public:
  TrainingGraph(const Model& m, const LowerOptions& o);

  const Model& model() const { return m_; }
  const TiledSegment* tiled() const { return o_.tiled; }
  const std::vector<TrainOp>& ops() const { return ops_; }
  int forward_op(int node) const { return f_op_[node]; }    // -1 for views
  int gradient_op(int node) const { return g_op_[node]; }   // -1 when not needed
  int param_grad_op(int node) const { return w_op_[node]; } // -1 without trained parameters
  int loss_op() const { return loss_op_; }
  int logits() const { return logits_; }

  // F ops in node order, L, then G and W in reverse node order: store-all.
  std::vector<int> store_all_order() const;

  // The plan of an op sequence (unfinished: frees and offsets come from finish_plan). The
  // forward phase ends at the first G or W op.
  Plan lower(const std::vector<int>& order) const;

private:
  void build();
  // A consumer's contribution to the gradient of one of its inputs.
  struct Contribution {
    int consumer; // node, or -1 for the loss
    int position; // which input of the consumer
  };
  std::vector<Contribution> contributions(int v) const;
  int alias_source(int v) const; // node whose gradient buffer v's gradient aliases, or -1

  const Model& m_;
  LowerOptions o_;
  std::vector<TrainOp> ops_;
  std::vector<int> f_op_, g_op_, w_op_;
  std::vector<char> needs_grad_;
  std::vector<char> trained_; // nodes whose parameters get gradients
  std::vector<std::vector<int>> consumers_;
  int loss_op_ = -1, logits_ = -1;

  friend class TrainingLowering;
};

} // namespace kiln
