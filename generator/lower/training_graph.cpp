#include "generator/lower/training_graph.hpp"

#include "generator/lower/op_lowering.hpp"
#include "generator/lower/tiled_segment.hpp"
#include "runtime/error.hpp"

#include <algorithm>
#include <map>

namespace kiln {

namespace {

int64_t value_bytes(const Model& m, int node) {
  return numel(m.nodes[node].shape) * int64_t(dtype_size(m.dtype));
}

// A view's storage: the nearest non-view producer (or the model input).
int storage_of(const Model& m, int ref) {
  while (ref != kModelInput && op_is_view(m.nodes[ref].op))
    ref = m.nodes[ref].inputs[0];
  return ref;
}

void add_input(std::vector<int>& in, int op) {
  if (op >= 0 && std::find(in.begin(), in.end(), op) == in.end()) in.push_back(op);
}

} // namespace

TrainingGraph::TrainingGraph(const Model& m, const LowerOptions& o) : m_(m), o_(o) { build(); }

int TrainingGraph::alias_source(int v) const {
  if (v == logits_) return -1;
  const auto& cs = consumers_[v];
  if (cs.size() != 1 || g_op_[cs[0]] < 0) return -1;
  const Node& c = m_.nodes[cs[0]];
  // A view's gradient is its input's, reshaped; an add's is dy itself for each input, which
  // then feeds nothing else that would add to it (a consumer listed once: v is one input).
  if (op_is_view(c.op) || (op_lowering(c.op).input_grad_is_dy && c.shape == m_.nodes[v].shape))
    return cs[0];
  return -1;
}

std::vector<TrainingGraph::Contribution> TrainingGraph::contributions(int v) const {
  std::vector<Contribution> r;
  if (v == logits_) r.push_back({-1, 0});
  const auto& cs = consumers_[v];
  for (auto it = cs.rbegin(); it != cs.rend(); ++it) {
    const int c = *it;
    if (g_op_[c] < 0) continue;                        // c does not reach the loss
    if (it != cs.rbegin() && *(it - 1) == c) continue; // listed once per input position below
    const auto& ins = m_.nodes[c].inputs;
    for (size_t k = 0; k < ins.size(); ++k)
      if (ins[k] == v) r.push_back({c, int(k)});
  }
  return r;
}

void TrainingGraph::build() {
  const Model& m = m_;
  const int n = int(m.nodes.size());
  consumers_ = m.consumers();
  logits_ = m.outputs.at(0);
  if (m.nodes[logits_].op == OpKind::softmax) logits_ = m.nodes[logits_].inputs[0];
  if (logits_ == kModelInput)
    throw Error(m.file, "outputs", "the loss needs logits computed by a layer");
  if (m.nodes[logits_].shape.size() < 2)
    throw Error(m.file, cat("layer \"", m.nodes[logits_].name, "\""), "logits need a class axis");
  // Gradients are needed for values that depend on trained parameters and reach the loss.
  needs_grad_.assign(n, 0);
  for (int i = 0; i < n; ++i) {
    for (const ParamSpec& p : m.params(i))
      needs_grad_[i] |= p.trainable;
    for (int r : m.nodes[i].inputs)
      needs_grad_[i] |= r != kModelInput && needs_grad_[r];
  }
  std::vector<char> reach(n, 0);
  reach[logits_] = 1;
  for (int i = n - 1; i >= 0; --i)
    if (reach[i])
      for (int r : m.nodes[i].inputs)
        if (r != kModelInput) reach[r] = 1;
  std::vector<char> is_output(n, 0);
  for (int out : m.outputs)
    is_output[out] = 1;

  f_op_.assign(n, -1), g_op_.assign(n, -1), w_op_.assign(n, -1);
  const TiledSegment* seg = o_.tiled;
  trained_.assign(n, 0);
  for (int i = 0; i < n; ++i) {
    bool has = false;
    for (const ParamSpec& p : m.params(i))
      has |= p.trainable;
    trained_[i] = has && needs_grad_[i] && reach[i];
  }
  for (int i = 0; i < n; ++i) {
    const Node& nd = m.nodes[i];
    if (op_is_view(nd.op)) continue;
    if (seg && seg->contains(i)) {
      if (i != seg->output_node()) continue;
      // The whole segment, tile by tile; only its (full) output stays.
      // Its temporary bytes: one tile's working set (the planner's bound).
      TrainOp op{TrainOp::tiled_forward,
                 i,
                 {},
                 is_output[i] ? 0 : value_bytes(m, i),
                 sched::tile_cost(seg->problem, seg->tiling).peak_bytes,
                 "TF " + nd.name};
      f_op_[i] = int(ops_.size());
      ops_.push_back(op);
      continue;
    }
    TrainOp op{TrainOp::forward, i, {}, 0, 0, "F " + nd.name};
    for (int r : nd.inputs) {
      const int s = storage_of(m, r);
      if (s != kModelInput) add_input(op.inputs, f_op_[s]);
    }
    op.output_bytes = is_output[i] ? 0 : value_bytes(m, i); // outputs are persistent buffers
    f_op_[i] = int(ops_.size());
    ops_.push_back(op);
  }
  // Cross-entropy keeps the probabilities for its backward; MSE's backward reads the logits.
  const bool mse = o_.recipe.loss == TrainLoss::mse;
  TrainOp loss{TrainOp::loss,
               logits_,
               {f_op_[storage_of(m, logits_)]},
               mse ? 0 : value_bytes(m, logits_),
               0,
               "L"};
  loss_op_ = int(ops_.size());
  ops_.push_back(loss);
  for (int i = 0; i < n; ++i)
    g_op_[i] = needs_grad_[i] && reach[i] ? 0 : -1; // marks; ops below
  // The op whose buffer holds v's gradient (through view aliases).
  std::vector<int> grad_buffer_op(n, -1);
  for (int v = n - 1; v >= 0; --v) {
    const Node& nd = m.nodes[v];
    if (seg && seg->contains(v) && v != seg->output_node()) continue; // inside the tiles
    if (g_op_[v] >= 0) {
      TrainOp op{TrainOp::gradient, v, {}, 0, 0, "G " + nd.name};
      const int alias = alias_source(v);
      if (alias >= 0) {
        add_input(op.inputs, grad_buffer_op[alias]);
        g_op_[v] = int(ops_.size());
        grad_buffer_op[v] = grad_buffer_op[alias];
      } else {
        op.output_bytes = value_bytes(m, v);
        bool first = true;
        for (const Contribution& c : contributions(v)) {
          if (c.consumer < 0) {
            add_input(op.inputs, loss_op_);
            if (mse) add_input(op.inputs, f_op_[storage_of(m, logits_)]);
          } else {
            add_input(op.inputs, grad_buffer_op[c.consumer]);
            const OpLowering& k = op_lowering(m.nodes[c.consumer].op);
            if (k.input_grad_reads_output) add_input(op.inputs, f_op_[c.consumer]);
            if (k.input_grad_reads_input) add_input(op.inputs, f_op_[storage_of(m, v)]);
            if (k.params_with_input_grad && !first) // an accumulated dx goes through scratch
              op.temp_bytes = std::max(op.temp_bytes, value_bytes(m, v));
          }
          first = false;
        }
        g_op_[v] = int(ops_.size());
        grad_buffer_op[v] = g_op_[v];
      }
      ops_.push_back(op);
    }
    if (trained_[v] && !(seg && seg->contains(v))) {
      TrainOp op{TrainOp::param_grad, v, {}, 0, 0, "W " + nd.name};
      const int x = nd.inputs[0];
      const bool with_params = op_lowering(nd.op).params_with_input_grad;
      if (!(with_params && x != kModelInput && g_op_[x] >= 0)) { // else G x computes them
        add_input(op.inputs, grad_buffer_op[v]);
        if (storage_of(m, x) != kModelInput) add_input(op.inputs, f_op_[storage_of(m, x)]);
        if (with_params) op.temp_bytes = value_bytes(m, v); // the unused dx
      }
      w_op_[v] = int(ops_.size());
      ops_.push_back(op);
    }
  }
  if (seg && g_op_[seg->output_node()] >= 0) {
    const int out = seg->output_node();
    TrainOp op{TrainOp::tiled_backward,
               out,
               {grad_buffer_op[out]},
               0,
               sched::tile_train_peak(seg->problem, seg->tiling),
               "TB " + m.nodes[out].name};
    ops_.push_back(op);
  }
  if (seg) // the tiles need no gradient of their own values outside the segment's ops
    for (int i : seg->nodes)
      if (i != seg->output_node()) g_op_[i] = -1;
}

std::vector<int> TrainingGraph::store_all_order() const {
  std::vector<int> order(ops_.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = int(i);
  return order;
}

} // namespace kiln
