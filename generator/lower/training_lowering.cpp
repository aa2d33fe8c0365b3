// TrainingGraph::lower: the plan steps of a training op sequence (training_graph.hpp).
#include "generator/lower/op_lowering.hpp"
#include "generator/lower/plan_builder.hpp"
#include "generator/lower/steps.hpp"
#include "generator/lower/tiled_segment.hpp"
#include "generator/lower/training_graph.hpp"
#include "runtime/error.hpp"

#include <map>

namespace kiln {

namespace {

// A view's storage: the nearest non-view producer (or the model input).
int storage_of(const Model& m, int ref) {
  while (ref != kModelInput && op_is_view(m.nodes[ref].op))
    ref = m.nodes[ref].inputs[0];
  return ref;
}

} // namespace

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
      Step s = plain_step(adam ? Fn::adam_update : Fn::sgd_update, p.name,
                          {{"param", p.buffer}, {"grad", p.grad}});
      if (adam)
        s.params = Adam{.lr = g_.o_.lr,
                        .beta1 = r.beta1,
                        .beta2 = r.beta2,
                        .eps = r.eps,
                        .weight_decay = r.weight_decay};
      else
        s.params = Sgd{.lr = g_.o_.lr, .weight_decay = r.weight_decay, .momentum = r.momentum};
      if (adam) {
        s.args.push_back({"m", state_buffer("m")});
        s.args.push_back({"v", state_buffer("v")});
        s.args.push_back({"step", count});
      } else if (r.momentum != 0) {
        s.args.push_back({"velocity", state_buffer("velocity")});
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
    p.signal = m_.signal;
    return p;
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
      bind_node_params(b_, m_, int(i), g_.trained_[i], params_);
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
    std::vector<int> inputs;
    for (int r : nd.inputs)
      inputs.push_back(value(r));
    act_[n] = output_buffer_[n] >= 0 ? output_buffer_[n] : fresh(act_name(nd.name), nd.shape);
    // batchnorm keeps no statistics: its backward recomputes them
    const OpLowering& rules = op_lowering(nd.op);
    const Step s = node_step(
        nd, *rules.train_forward,
        forward_args(
            m_, n, inputs, true,
            [&](const std::string& suffix) { return param(n, suffix.c_str()); }, act_[n]));
    if (rules.split_forward) {
      for (const Step& part : rules.split_forward(s, m_, nd))
        b_.step(part);
    } else {
      b_.step(s);
    }
  }

  void loss() {
    if (g_.o_.recipe.loss == TrainLoss::mse) {
      b_.step(plain_step(Fn::mse_forward, "loss",
                         {{"logits", value(g_.logits_)}, {"target", target_}, {"loss", loss_}}));
      return;
    }
    probs_ = fresh("loss.probs", m_.nodes[g_.logits_].shape);
    Step s = plain_step(
        Fn::softmax_xent_forward, "loss",
        {{"logits", value(g_.logits_)}, {"target", target_}, {"probs", probs_}, {"loss", loss_}});
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
    for (const TrainingGraph::Contribution& c : g_.contributions(v)) {
      if (c.consumer < 0) {
        const bool mse = g_.o_.recipe.loss == TrainLoss::mse;
        Step s = mse ? plain_step(Fn::mse_backward, "loss",
                                  {{"logits", value(g_.logits_)}, {"target", target_}})
                     : plain_step(Fn::softmax_xent_backward, "loss",
                                  {{"probs", probs_}, {"target", target_}});
        if (!mse) s.op = OpKind::softmax;
        s.args.push_back({"dlogits", dst});
        s.accumulate = !first;
        b_.step(std::move(s));
      } else {
        Site site(*this, c.consumer);
        op_lowering(m_.nodes[c.consumer].op).input_grad(site, c.position, dst, !first);
      }
      first = false;
    }
    grad_[v] = dst;
  }

  void param_grad(int n) {
    const Node& nd = m_.nodes[n];
    const int x = nd.inputs[0];
    const OpLowering& rules = op_lowering(nd.op);
    // Computed by the input gradient's step where there is one.
    if (rules.params_with_input_grad && x != kModelInput && g_.g_op_[x] >= 0) return;
    Site site(*this, n);
    rules.param_grads(site, false);
  }

  // A node's backward seen by its rules (op_lowering.hpp): the latest buffers of its values.
  class Site : public BackwardSite {
  public:
    Site(TrainingLowering& l, int node) : l_(l), node_(node) {}
    const Model& model() const override { return l_.m_; }
    int node() const override { return node_; }
    Attrs attrs() const override { return l_.m_.nodes[size_t(node_)].attrs; }
    int dy() const override { return l_.grad_[size_t(node_)]; }
    int output() override { return l_.value(node_); }
    int input(int k) override { return l_.value(l_.m_.nodes[size_t(node_)].inputs.at(size_t(k))); }
    int param(const char* suffix) override { return l_.param(node_, suffix); }
    int param_grad(const char* suffix) override { return l_.param_grad_buf(node_, suffix); }
    int scratch(const std::string& name, const Shape& shape) override {
      return l_.fresh(name, shape);
    }
    void emit(Step s) override { l_.b_.step(std::move(s)); }

  private:
    TrainingLowering& l_;
    int node_;
  };

  const TrainingGraph& g_;
  const Model& m_;
  PlanBuilder b_;
  int input_ = -1, target_ = -1, loss_ = -1, probs_ = -1;
  std::vector<int> act_, grad_, output_buffer_;
  ParamIndex params_;
  std::map<std::string, int> count_;
  std::map<std::pair<int, int>, int> views_;
};

Plan TrainingGraph::lower(const std::vector<int>& order) const {
  return TrainingLowering(*this).lower(order);
}

} // namespace kiln
