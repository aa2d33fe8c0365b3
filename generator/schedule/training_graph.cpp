#include "generator/schedule/training_graph.hpp"

#include "generator/emit/concat_chunks.hpp"
#include "generator/emit/plan_builder.hpp"
#include "generator/model/param_ranges.hpp"
#include "generator/schedule/tiled_segment.hpp"
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

Fn train_forward_fn(OpKind op) {
  switch (op) {
  case OpKind::conv2d: return Fn::conv2d_forward;
  case OpKind::linear: return Fn::linear_forward;
  case OpKind::batchnorm: return Fn::batchnorm_forward_train;
  case OpKind::relu: return Fn::relu_forward;
  case OpKind::maxpool2d: return Fn::maxpool2d_forward;
  case OpKind::avgpool2d: return Fn::avgpool2d_forward;
  case OpKind::adaptive_avgpool2d:
  case OpKind::global_avgpool: return Fn::adaptive_avgpool2d_forward;
  case OpKind::add: return Fn::add_forward;
  case OpKind::concat: return Fn::concat_forward;
  case OpKind::upsample2d: return Fn::upsample2d_forward;
  case OpKind::softmax: return Fn::softmax_forward;
  default: throw Error("", "", cat(op_name(op), " has no forward step"));
  }
}

} // namespace

TrainingGraph::TrainingGraph(const Model& m, const LowerOptions& o) : m_(m), o_(o) { build(); }

int TrainingGraph::alias_source(int v) const {
  if (v == logits_) return -1;
  const auto& cs = consumers_[v];
  if (cs.size() == 1 && op_is_view(m_.nodes[cs[0]].op) && g_op_[cs[0]] >= 0) return cs[0];
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
            const OpKind k = m.nodes[c.consumer].op;
            if (k == OpKind::relu || k == OpKind::softmax) add_input(op.inputs, f_op_[c.consumer]);
            if (k == OpKind::maxpool2d || k == OpKind::batchnorm)
              add_input(op.inputs, f_op_[storage_of(m, v)]);
            if (k == OpKind::batchnorm && !first)
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
      const bool bn_inside_g = nd.op == OpKind::batchnorm && x != kModelInput && g_op_[x] >= 0;
      if (!bn_inside_g) {
        add_input(op.inputs, grad_buffer_op[v]);
        if (storage_of(m, x) != kModelInput) add_input(op.inputs, f_op_[storage_of(m, x)]);
        if (nd.op == OpKind::batchnorm) op.temp_bytes = value_bytes(m, v); // the unused dx
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

// Emits the plan steps of an op sequence.
class TrainingLowering {
public:
  TrainingLowering(const TrainingGraph& g) : g_(g), m_(g.m_), b_(header()) {}

  Plan lower(const std::vector<int>& order) {
    b_.phase("forward");
    setup();
    bool backward = false;
    for (int op : order) {
      const TrainOp& t = g_.ops_.at(size_t(op));
      if (!backward && (t.kind == TrainOp::gradient || t.kind == TrainOp::param_grad ||
                        t.kind == TrainOp::tiled_backward)) {
        b_.phase("backward");
        backward = true;
      }
      switch (t.kind) {
      case TrainOp::tiled_forward:
        act_[t.node] = output_buffer_[t.node] >= 0
                           ? output_buffer_[t.node]
                           : fresh(act_name(m_.nodes[t.node].name), m_.nodes[t.node].shape);
        tiles().forward(input_, act_[t.node], true);
        break;
      case TrainOp::tiled_backward: tiles().backward(input_, grad_[t.node]); break;
      case TrainOp::forward: forward(t.node); break;
      case TrainOp::loss: loss(); break;
      case TrainOp::gradient: gradient(t.node); break;
      case TrainOp::param_grad: param_grad(t.node); break;
      }
    }
    if (!backward) b_.phase("backward");
    b_.phase("update");
    update();
    return b_.take();
  }

private:
  // The update phase: one optimizer step per trained parameter. Optimizer state (velocities,
  // moments) is f32, f64 in f64 plans, whatever the parameters' storage type.
  void update() {
    const TrainRecipe& r = g_.o_.recipe;
    const DType state = m_.dtype == DType::f64 ? DType::f64 : DType::f32;
    const bool adam = r.optimizer == Optimizer::adam;
    const int count = adam ? b_.buffer(std::string(kOptimizerStepBuffer), {1},
                                       BufferRole::optimizer_state, DType::i32)
                           : -1;
    for (size_t i = 0; i < b_.plan().params.size(); ++i) {
      const ParamBinding p = b_.plan().params[i]; // a copy: buffer() may grow the plan
      if (p.grad < 0) continue;
      const Shape shape = b_.plan().buffers[size_t(p.buffer)].shape;
      auto state_buffer = [&](const char* what) {
        return b_.buffer(cat("opt.", what, ":", p.name), shape, BufferRole::optimizer_state, state);
      };
      Step s = step(adam ? Fn::adam_update : Fn::sgd_update, -1,
                    {{"param", p.buffer}, {"grad", p.grad}});
      s.node = p.name;
      s.lr = g_.o_.lr;
      s.weight_decay = r.weight_decay;
      if (adam) {
        s.args.push_back({"m", state_buffer("m")});
        s.args.push_back({"v", state_buffer("v")});
        s.args.push_back({"step", count});
        s.beta1 = r.beta1, s.beta2 = r.beta2, s.eps = r.eps;
      } else if (r.momentum != 0) {
        s.args.push_back({"velocity", state_buffer("velocity")});
        s.momentum = r.momentum;
      }
      b_.step(s);
    }
  }

  Plan header() const {
    Plan p;
    p.model = m_.name;
    p.gpu = g_.o_.gpu;
    p.kiln_version = KILN_VERSION;
    p.dtype = m_.dtype;
    p.train = true;
    return p;
  }

  Step step(Fn fn, int node, std::vector<Arg> args) const {
    Step s;
    s.kind = StepKind::reference;
    s.fn = fn;
    if (node >= 0) {
      s.node = m_.nodes[node].name;
      s.op = m_.nodes[node].op;
      s.attrs = m_.nodes[node].attrs;
    }
    s.args = std::move(args);
    return s;
  }

  // A fresh buffer for one execution: "act:x", then "act:x#2", ...
  int fresh(const std::string& name, const Shape& shape) {
    const int k = ++count_[name];
    return b_.buffer(k == 1 ? name : name + "#" + std::to_string(k), shape, BufferRole::activation);
  }

  void setup() {
    input_ = b_.buffer(input_buffer_name(m_), m_.input_shape, BufferRole::input);
    b_.plan().inputs.push_back(input_);
    for (size_t i = 0; i < m_.nodes.size(); ++i)
      for (const ParamSpec& ps : m_.params(int(i))) {
        const std::string pname = m_.nodes[i].name + "." + ps.suffix;
        const int buf = b_.buffer(param_buffer_name(pname), ps.shape,
                                  ps.trainable ? BufferRole::param : BufferRole::state);
        ParamBinding pb{pname, buf, -1, 0, 0};
        std::tie(pb.init_lo, pb.init_hi) = param_init_range(m_, int(i), ps);
        if (ps.trainable && g_.trained_[i])
          pb.grad = b_.buffer(grad_buffer_name(pname), ps.shape, BufferRole::param_grad);
        params_[pname] = int(b_.plan().params.size());
        b_.plan().params.push_back(pb);
      }
    // Classes per position (the logits without their class axis), or a teacher's logits.
    Shape t = m_.nodes[g_.logits_].shape;
    if (g_.o_.recipe.loss == TrainLoss::mse) {
      target_ = b_.buffer("target", t, BufferRole::target, m_.dtype);
    } else {
      t.erase(t.begin() + 1);
      target_ = b_.buffer("target", t, BufferRole::target, DType::i64);
    }
    loss_ = b_.buffer("loss", {1}, BufferRole::loss);
    b_.plan().target = target_;
    b_.plan().loss = loss_;
    act_.assign(m_.nodes.size(), -1), grad_.assign(m_.nodes.size(), -1);
    output_buffer_.assign(m_.nodes.size(), -1);
    for (int o : m_.outputs) {
      const int s = storage_of(m_, o);
      if (s == kModelInput)
        throw Error(m_.file, "outputs", "an output must be computed by a layer");
      if (output_buffer_[s] < 0)
        output_buffer_[s] =
            b_.buffer(act_name(m_.nodes[s].name), m_.nodes[s].shape, BufferRole::output);
      b_.plan().outputs.push_back(
          o == s ? output_buffer_[s]
                 : b_.view(act_name(m_.nodes[o].name), m_.nodes[o].shape, output_buffer_[s]));
    }
  }

  TileEmitter tiles() {
    return TileEmitter(
        m_, *g_.o_.tiled, b_,
        {[this](int node, const char* suffix) { return param(node, suffix); },
         [this](int node, const char* suffix) { return param_grad_buf(node, suffix); }});
  }

  int param(int node, const char* suffix) {
    return b_.plan().params[params_.at(m_.nodes[node].name + "." + suffix)].buffer;
  }
  int param_grad_buf(int node, const char* suffix) {
    return b_.plan().params[params_.at(m_.nodes[node].name + "." + suffix)].grad;
  }

  // The latest buffer holding a forward value (a view over its storage's latest buffer).
  int value(int ref) {
    if (ref == kModelInput) return input_;
    if (!op_is_view(m_.nodes[ref].op)) {
      if (act_[ref] < 0)
        throw Error("", m_.nodes[ref].name, "read before it is computed (schedule bug)");
      return act_[ref];
    }
    const int base = value(m_.nodes[ref].inputs[0]);
    auto key = std::pair{ref, base};
    auto it = views_.find(key);
    if (it != views_.end()) return it->second;
    const int v = b_.view(b_.plan().buffers[b_.plan().base(base)].name + ">" + m_.nodes[ref].name,
                          m_.nodes[ref].shape, base);
    views_[key] = v;
    return v;
  }

  void forward(int n) {
    const Node& nd = m_.nodes[n];
    std::vector<Arg> args;
    if (nd.op == OpKind::add || nd.op == OpKind::concat) {
      for (size_t k = 0; k < nd.inputs.size(); ++k)
        args.push_back({"x" + std::to_string(k), value(nd.inputs[k])});
    } else {
      args.push_back({"x", value(nd.inputs[0])});
    }
    for (const ParamSpec& ps : m_.params(n)) {
      if (!ps.trainable) continue; // running statistics are unused in training
      const int buf = param(n, ps.suffix.c_str());
      args.push_back(
          {nd.op == OpKind::batchnorm ? ps.suffix : (ps.suffix == "weight" ? "w" : "b"), buf});
    }
    act_[n] = output_buffer_[n] >= 0 ? output_buffer_[n] : fresh(act_name(nd.name), nd.shape);
    args.push_back({"y", act_[n]}); // batchnorm keeps no statistics: its backward recomputes them
    const Step s = step(train_forward_fn(nd.op), n, std::move(args));
    if (nd.op == OpKind::concat) {
      std::vector<int64_t> channels;
      for (int r : nd.inputs)
        channels.push_back(m_.shape_of(r)[1]);
      for (const Step& part : concat_chunks(s, channels))
        b_.step(part);
    } else {
      b_.step(s);
    }
  }

  void loss() {
    if (g_.o_.recipe.loss == TrainLoss::mse) {
      Step s = step(Fn::mse_forward, -1,
                    {{"logits", value(g_.logits_)}, {"target", target_}, {"loss", loss_}});
      s.node = "loss";
      b_.step(std::move(s));
      return;
    }
    probs_ = fresh("loss.probs", m_.nodes[g_.logits_].shape);
    Step s = step(
        Fn::softmax_xent_forward, -1,
        {{"logits", value(g_.logits_)}, {"target", target_}, {"probs", probs_}, {"loss", loss_}});
    s.node = "loss";
    s.op = OpKind::softmax;
    b_.step(std::move(s));
  }

  void gradient(int v) {
    const Node& nd = m_.nodes[v];
    const int alias = g_.alias_source(v);
    if (alias >= 0) {
      grad_[v] = b_.view(b_.plan().buffers[b_.plan().base(grad_[alias])].name + ">" + nd.name,
                         nd.shape, grad_[alias]);
      return;
    }
    const int dst = fresh(dact_name(nd.name), nd.shape);
    bool first = true;
    auto emit = [&](Step s, const char* out_role) {
      s.args.push_back({out_role, dst});
      s.accumulate = !first;
      first = false;
      b_.step(std::move(s));
    };
    for (const TrainingGraph::Contribution& c : g_.contributions(v)) {
      if (c.consumer < 0 && g_.o_.recipe.loss == TrainLoss::mse) {
        Step s = step(Fn::mse_backward, -1, {{"logits", value(g_.logits_)}, {"target", target_}});
        s.node = "loss";
        emit(std::move(s), "dlogits");
        continue;
      }
      if (c.consumer < 0) {
        Step s = step(Fn::softmax_xent_backward, -1, {{"probs", probs_}, {"target", target_}});
        s.node = "loss";
        s.op = OpKind::softmax;
        emit(std::move(s), "dlogits");
        continue;
      }
      const int c_node = c.consumer;
      const Node& cn = m_.nodes[c_node];
      const int dy = grad_[c_node];
      switch (cn.op) {
      case OpKind::conv2d:
      case OpKind::linear:
        emit(step(cn.op == OpKind::conv2d ? Fn::conv2d_backward_data : Fn::linear_backward_data,
                  c_node, {{"dy", dy}, {"w", param(c_node, "weight")}}),
             "dx");
        break;
      case OpKind::batchnorm: {
        std::vector<Arg> args = {{"x", value(v)},
                                 {"dy", dy},
                                 {"weight", param(c_node, "weight")},
                                 {"dweight", param_grad_buf(c_node, "weight")},
                                 {"dbias", param_grad_buf(c_node, "bias")}};
        if (first) {
          emit(step(Fn::batchnorm_backward, c_node, std::move(args)), "dx");
        } else { // dweight and dbias are written fresh: an accumulated dx goes through a copy
          const int tmp = fresh("dtmp:" + cn.name, nd.shape);
          args.push_back({"dx", tmp});
          b_.step(step(Fn::batchnorm_backward, c_node, std::move(args)));
          emit(step(Fn::copy, c_node, {{"src", tmp}}), "dst");
        }
        break;
      }
      case OpKind::relu:
        emit(step(Fn::relu_backward, c_node, {{"y", value(c_node)}, {"dy", dy}}), "dx");
        break;
      case OpKind::softmax:
        emit(step(Fn::softmax_backward, c_node, {{"y", value(c_node)}, {"dy", dy}}), "dx");
        break;
      case OpKind::maxpool2d:
        emit(step(Fn::maxpool2d_backward, c_node, {{"x", value(v)}, {"dy", dy}}), "dx");
        break;
      case OpKind::avgpool2d: emit(step(Fn::avgpool2d_backward, c_node, {{"dy", dy}}), "dx"); break;
      case OpKind::adaptive_avgpool2d:
      case OpKind::global_avgpool:
        emit(step(Fn::adaptive_avgpool2d_backward, c_node, {{"dy", dy}}), "dx");
        break;
      case OpKind::upsample2d:
        emit(step(Fn::upsample2d_backward, c_node, {{"dy", dy}}), "dx");
        break;
      case OpKind::add:
      case OpKind::flatten:
      case OpKind::fold:
      case OpKind::unfold: emit(step(Fn::copy, c_node, {{"src", dy}}), "dst"); break;
      case OpKind::concat: {
        Step s = step(Fn::concat_backward, c_node, {{"dy", dy}});
        for (int k = 0; k < c.position; ++k)
          s.channel_offset += m_.shape_of(cn.inputs[size_t(k)])[1];
        emit(std::move(s), "dx");
        break;
      }
      }
    }
    grad_[v] = dst;
  }

  void param_grad(int n) {
    const Node& nd = m_.nodes[n];
    const int x = nd.inputs[0];
    if (nd.op == OpKind::conv2d || nd.op == OpKind::linear) {
      const bool conv = nd.op == OpKind::conv2d;
      b_.step(step(conv ? Fn::conv2d_backward_weight : Fn::linear_backward_weight, n,
                   {{"x", value(x)}, {"dy", grad_[n]}, {"dw", param_grad_buf(n, "weight")}}));
      if (nd.attrs.bias)
        b_.step(step(Fn::bias_backward, n, {{"dy", grad_[n]}, {"db", param_grad_buf(n, "bias")}}));
      return;
    }
    if (nd.op == OpKind::batchnorm && (x == kModelInput || g_.g_op_[x] < 0)) {
      const int scratch = fresh("dtmp:" + nd.name, nd.shape);
      b_.step(step(Fn::batchnorm_backward, n,
                   {{"x", value(x)},
                    {"dy", grad_[n]},
                    {"weight", param(n, "weight")},
                    {"dx", scratch},
                    {"dweight", param_grad_buf(n, "weight")},
                    {"dbias", param_grad_buf(n, "bias")}}));
    }
  }

  const TrainingGraph& g_;
  const Model& m_;
  PlanBuilder b_;
  int input_ = -1, target_ = -1, loss_ = -1, probs_ = -1;
  std::vector<int> act_, grad_, output_buffer_;
  std::map<std::string, int> params_, count_;
  std::map<std::pair<int, int>, int> views_;
};

Plan TrainingGraph::lower(const std::vector<int>& order) const {
  return TrainingLowering(*this).lower(order);
}

} // namespace kiln
