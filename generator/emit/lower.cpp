#include "generator/emit/lower.hpp"

#include "generator/emit/plan_builder.hpp"
#include "generator/model/param_ranges.hpp"
#include "runtime/error.hpp"

namespace kiln {

std::string input_buffer_name(const Model& m) { return "in:" + m.input_name; }
std::string act_name(const std::string& node) { return "act:" + node; }
std::string dact_name(const std::string& node) { return "dact:" + node; }
std::string param_buffer_name(const std::string& param) { return "param:" + param; }
std::string grad_buffer_name(const std::string& param) { return "grad:" + param; }

namespace {

Fn forward_fn(OpKind op, bool train) {
  switch (op) {
  case OpKind::conv2d: return Fn::conv2d_forward;
  case OpKind::linear: return Fn::linear_forward;
  case OpKind::batchnorm: return train ? Fn::batchnorm_forward_train : Fn::batchnorm_forward;
  case OpKind::relu: return Fn::relu_forward;
  case OpKind::maxpool2d: return Fn::maxpool2d_forward;
  case OpKind::avgpool2d: return Fn::avgpool2d_forward;
  case OpKind::adaptive_avgpool2d:
  case OpKind::global_avgpool: return Fn::adaptive_avgpool2d_forward;
  case OpKind::add: return Fn::add_forward;
  case OpKind::concat: return Fn::concat_forward;
  case OpKind::upsample2d: return Fn::upsample2d_forward;
  case OpKind::softmax: return Fn::softmax_forward;
  default: throw Error("", "", cat(op_name(op), " is a view and has no step"));
  }
}

class Lowering {
public:
  Lowering(const Model& m, const LowerOptions& o) : m_(m), o_(o), b_(header()) {}

  Plan run() { return finish_plan(build()); }

  Plan build() {
    b_.phase("forward");
    forward();
    if (o_.train) {
      loss();
      b_.phase("backward");
      backward();
      b_.phase("update");
      for (const ParamBinding& p : b_.plan().params)
        if (p.grad >= 0) {
          Step& s = b_.step(step(Fn::sgd_update, -1, {{"param", p.buffer}, {"grad", p.grad}}));
          s.node = p.name;
          s.lr = o_.lr;
        }
    }
    return b_.take();
  }

private:
  Plan header() const {
    Plan p;
    p.model = m_.name;
    p.gpu = o_.gpu;
    p.kiln_version = KILN_VERSION;
    p.dtype = m_.dtype;
    p.train = o_.train;
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

  int value(int ref) const { return ref == kModelInput ? input_ : val_[ref]; }

  void forward() {
    input_ = b_.buffer(input_buffer_name(m_), m_.input_shape, BufferRole::input);
    b_.plan().inputs.push_back(input_);
    std::vector<char> is_output(m_.nodes.size(), 0);
    for (int o : m_.outputs) is_output[o] = 1;
    val_.assign(m_.nodes.size(), -1);
    for (size_t i = 0; i < m_.nodes.size(); ++i) {
      const Node& n = m_.nodes[i];
      const BufferRole role = is_output[i] ? BufferRole::output : BufferRole::activation;
      if (op_is_view(n.op)) {
        val_[i] = b_.view(act_name(n.name), n.shape, value(n.inputs[0]));
        if (is_output[i]) {
          Buffer& base = b_.at(b_.plan().base(val_[i]));
          if (base.role == BufferRole::activation) base.role = BufferRole::output;
          b_.at(val_[i]).role = BufferRole::output;
        }
        continue;
      }
      val_[i] = b_.buffer(act_name(n.name), n.shape, role);
      std::vector<Arg> args;
      if (n.op == OpKind::add || n.op == OpKind::concat) {
        for (size_t k = 0; k < n.inputs.size(); ++k)
          args.push_back({"x" + std::to_string(k), value(n.inputs[k])});
      } else {
        args.push_back({"x", value(n.inputs[0])});
      }
      const bool train_bn = o_.train && n.op == OpKind::batchnorm;
      for (const ParamSpec& ps : m_.params(int(i))) {
        const std::string pname = n.name + "." + ps.suffix;
        const int buf = b_.buffer(param_buffer_name(pname), ps.shape,
                                  ps.trainable ? BufferRole::param : BufferRole::state);
        ParamBinding pb{pname, buf, -1, 0, 0};
        std::tie(pb.init_lo, pb.init_hi) = param_init_range(m_, int(i), ps);
        params_[pname] = int(b_.plan().params.size());
        b_.plan().params.push_back(pb);
        if (train_bn && !ps.trainable) continue; // running statistics unused in training
        std::string role = ps.suffix;
        if (n.op != OpKind::batchnorm) role = ps.suffix == "weight" ? "w" : "b";
        args.push_back({role, buf});
      }
      args.push_back({"y", val_[i]});
      if (train_bn) {
        const Shape c{n.shape[1]};
        args.push_back({"mean", b_.buffer("save:" + n.name + ".mean", c, BufferRole::activation)});
        args.push_back({"invstd", b_.buffer("save:" + n.name + ".invstd", c, BufferRole::activation)});
      }
      b_.step(step(forward_fn(n.op, o_.train), int(i), std::move(args)));
    }
    for (int o : m_.outputs) b_.plan().outputs.push_back(val_[o]);
  }

  void loss() {
    logits_ = m_.outputs[0];
    if (m_.nodes[logits_].op == OpKind::softmax) logits_ = m_.nodes[logits_].inputs[0];
    if (logits_ == kModelInput) throw Error(m_.file, "outputs", "the loss needs logits computed by a layer");
    const Shape& l = m_.nodes[logits_].shape;
    if (l.size() < 2)
      throw Error(m_.file, cat("layer \"", m_.nodes[logits_].name, "\""), "logits need a class axis");
    Shape t = l;
    t.erase(t.begin() + 1);
    PlanBuilder& b = b_;
    target_ = b.buffer("target", t, BufferRole::target, DType::i64);
    probs_ = b.buffer("loss.probs", l, BufferRole::activation);
    const int loss = b.buffer("loss", {1}, BufferRole::loss);
    b.plan().target = target_;
    b.plan().loss = loss;
    Step s = step(Fn::softmax_xent_forward, -1,
                  {{"logits", val_[logits_]}, {"target", target_}, {"probs", probs_}, {"loss", loss}});
    s.node = "loss";
    s.op = OpKind::softmax;
    b.step(std::move(s));
  }

  // The gradient buffer of a value, and whether this contribution adds to earlier ones.
  std::pair<int, bool> grad_target(int ref) {
    if (grad_[ref] >= 0) return {grad_[ref], true};
    grad_[ref] = b_.buffer(dact_name(m_.nodes[ref].name), m_.nodes[ref].shape, BufferRole::activation);
    return {grad_[ref], false};
  }

  void contribute(Step s, std::string_view out_role, int ref) {
    auto [buf, acc] = grad_target(ref);
    s.args.push_back({std::string(out_role), buf});
    s.accumulate = acc;
    b_.step(std::move(s));
  }

  int param_grad(const std::string& pname) {
    ParamBinding& pb = b_.plan().params[params_.at(pname)];
    if (pb.grad < 0)
      pb.grad = b_.buffer(grad_buffer_name(pname), b_.plan().buffers[pb.buffer].shape,
                          BufferRole::param_grad);
    return pb.grad;
  }

  int param(const std::string& pname) { return b_.plan().params[params_.at(pname)].buffer; }

  void backward() {
    const size_t n = m_.nodes.size();
    need_.assign(n, 0);
    for (size_t i = 0; i < n; ++i) {
      for (const ParamSpec& ps : m_.params(int(i))) need_[i] |= ps.trainable;
      for (int r : m_.nodes[i].inputs) need_[i] |= r != kModelInput && need_[r];
    }
    grad_.assign(n, -1);
    const auto consumers = m_.consumers();
    if (need_[logits_]) {
      Step s = step(Fn::softmax_xent_backward, -1, {{"probs", probs_}, {"target", target_}});
      s.node = "loss";
      s.op = OpKind::softmax;
      contribute(std::move(s), "dlogits", logits_);
    }
    for (int i = int(n) - 1; i >= 0; --i) {
      if (grad_[i] < 0) continue;
      const Node& nd = m_.nodes[i];
      const int dy = grad_[i];
      const int x = nd.inputs[0];
      auto wants = [&](int ref) { return ref != kModelInput && need_[ref]; };
      switch (nd.op) {
      case OpKind::conv2d:
      case OpKind::linear: {
        const bool conv = nd.op == OpKind::conv2d;
        if (wants(x))
          contribute(step(conv ? Fn::conv2d_backward_data : Fn::linear_backward_data, i,
                          {{"dy", dy}, {"w", param(nd.name + ".weight")}}),
                     "dx", x);
        b_.step(step(conv ? Fn::conv2d_backward_weight : Fn::linear_backward_weight, i,
                     {{"x", value(x)}, {"dy", dy}, {"dw", param_grad(nd.name + ".weight")}}));
        if (nd.attrs.bias)
          b_.step(step(Fn::bias_backward, i, {{"dy", dy}, {"db", param_grad(nd.name + ".bias")}}));
        break;
      }
      case OpKind::batchnorm: {
        // dweight and dbias are written fresh, so an accumulated dx goes through a copy.
        const bool direct = wants(x) && grad_[x] < 0;
        int dx = direct ? grad_target(x).first
                        : b_.buffer("dtmp:" + nd.name, nd.shape, BufferRole::activation);
        const std::string mean = "save:" + nd.name + ".mean", inv = "save:" + nd.name + ".invstd";
        b_.step(step(Fn::batchnorm_backward, i,
                     {{"x", value(x)}, {"dy", dy}, {"weight", param(nd.name + ".weight")},
                      {"mean", b_.find(mean)}, {"invstd", b_.find(inv)}, {"dx", dx},
                      {"dweight", param_grad(nd.name + ".weight")},
                      {"dbias", param_grad(nd.name + ".bias")}}));
        if (!direct && wants(x)) contribute(step(Fn::copy, i, {{"src", dx}}), "dst", x);
        break;
      }
      case OpKind::relu:
        if (wants(x)) contribute(step(Fn::relu_backward, i, {{"y", val_[i]}, {"dy", dy}}), "dx", x);
        break;
      case OpKind::softmax:
        if (wants(x)) contribute(step(Fn::softmax_backward, i, {{"y", val_[i]}, {"dy", dy}}), "dx", x);
        break;
      case OpKind::maxpool2d:
        if (wants(x))
          contribute(step(Fn::maxpool2d_backward, i, {{"x", value(x)}, {"dy", dy}}), "dx", x);
        break;
      case OpKind::avgpool2d:
        if (wants(x)) contribute(step(Fn::avgpool2d_backward, i, {{"dy", dy}}), "dx", x);
        break;
      case OpKind::adaptive_avgpool2d:
      case OpKind::global_avgpool:
        if (wants(x)) contribute(step(Fn::adaptive_avgpool2d_backward, i, {{"dy", dy}}), "dx", x);
        break;
      case OpKind::upsample2d:
        if (wants(x)) contribute(step(Fn::upsample2d_backward, i, {{"dy", dy}}), "dx", x);
        break;
      case OpKind::add:
        for (int r : nd.inputs)
          if (wants(r)) contribute(step(Fn::copy, i, {{"src", dy}}), "dst", r);
        break;
      case OpKind::concat: {
        int64_t offset = 0;
        for (int r : nd.inputs) {
          if (wants(r)) {
            Step s = step(Fn::concat_backward, i, {{"dy", dy}});
            s.channel_offset = offset;
            contribute(std::move(s), "dx", r);
          }
          offset += m_.shape_of(r)[1];
        }
        break;
      }
      case OpKind::flatten:
      case OpKind::fold:
      case OpKind::unfold:
        if (!wants(x)) break;
        if (grad_[x] < 0 && consumers[x].size() == 1)
          grad_[x] = b_.view(dact_name(m_.nodes[x].name), m_.nodes[x].shape, dy);
        else
          contribute(step(Fn::copy, i, {{"src", dy}}), "dst", x);
        break;
      }
    }
  }

  const Model& m_;
  LowerOptions o_;
  PlanBuilder b_;
  int input_ = -1, logits_ = -1, target_ = -1, probs_ = -1;
  std::vector<int> val_, grad_;
  std::vector<char> need_;
  std::map<std::string, int> params_;
};

} // namespace

Plan lower_model(const Model& m, const LowerOptions& o) { return Lowering(m, o).run(); }
Plan lower_model_steps(const Model& m, const LowerOptions& o) { return Lowering(m, o).build(); }

} // namespace kiln
