// TrainingGraph::lower: the plan steps of a training op sequence (training_graph.hpp).
#include "generator/lower/concat_chunks.hpp"
#include "generator/lower/plan_builder.hpp"
#include "generator/lower/tiled_segment.hpp"
#include "generator/lower/training_graph.hpp"
#include "generator/model/param_ranges.hpp"
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
    return p;
  }

  Step step(Fn fn, int node, std::vector<Arg> args) const {
    Step s;
    s.kind = StepKind::reference;
    s.fn = fn;
    s.params = default_params(fn);
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
          s.channel_slice().offset += m_.shape_of(cn.inputs[size_t(k)])[1];
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
