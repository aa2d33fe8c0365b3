#include "generator/lower/lower.hpp"

#include "generator/lower/concat_chunks.hpp"
#include "generator/lower/plan_builder.hpp"
#include "generator/model/param_ranges.hpp"
#include "generator/lower/tiled_segment.hpp"
#include "generator/lower/training_graph.hpp"

#include "runtime/error.hpp"

#include <fmt/format.h>
#include <map>

namespace kiln {

std::string TrainRecipe::key() const {
  return fmt::format("{} momentum {} weight_decay {} betas {} {} eps {} loss {}",
                     optimizer == Optimizer::adam ? "adam" : "sgd", momentum, weight_decay, beta1,
                     beta2, eps, loss == TrainLoss::mse ? "mse" : "cross_entropy");
}

std::string input_buffer_name(const Model& m) { return "in:" + m.input_name; }
std::string act_name(const std::string& node) { return "act:" + node; }
std::string dact_name(const std::string& node) { return "dact:" + node; }
std::string param_buffer_name(const std::string& param) { return "param:" + param; }
std::string grad_buffer_name(const std::string& param) { return "grad:" + param; }

namespace {

Fn forward_fn(OpKind op) {
  switch (op) {
  case OpKind::conv2d: return Fn::conv2d_forward;
  case OpKind::linear: return Fn::linear_forward;
  case OpKind::batchnorm: return Fn::batchnorm_forward;
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
    return b_.take();
  }

private:
  Plan header() const {
    Plan p;
    p.model = m_.name;
    p.gpu = o_.gpu;
    p.kiln_version = KILN_VERSION;
    p.dtype = m_.dtype;
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

  int value(int ref) const { return ref == kModelInput ? input_ : val_[ref]; }

  void add_params(int i) {
    const Node& n = m_.nodes[i];
    for (const ParamSpec& ps : m_.params(i)) {
      const std::string pname = n.name + "." + ps.suffix;
      const int buf = b_.buffer(param_buffer_name(pname), ps.shape,
                                ps.trainable ? BufferRole::param : BufferRole::state);
      ParamBinding pb{pname, buf, -1, 0, 0};
      std::tie(pb.init_lo, pb.init_hi) = param_init_range(m_, i, ps);
      b_.plan().params.push_back(pb);
      params_[pname] = buf;
    }
  }

  void forward() {
    input_ = b_.buffer(input_buffer_name(m_), m_.input_shape, BufferRole::input);
    b_.plan().inputs.push_back(input_);
    std::vector<char> is_output(m_.nodes.size(), 0);
    for (int o : m_.outputs)
      is_output[o] = 1;
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
      const bool in_segment = o_.tiled && o_.tiled->contains(int(i));
      if (in_segment && int(i) != o_.tiled->output_node()) {
        add_params(int(i)); // used by the tiles
        continue;
      }
      val_[i] = b_.buffer(act_name(n.name), n.shape, role);
      if (in_segment) { // the segment's output, computed tile by tile
        add_params(int(i));
        TileEmitter(m_, *o_.tiled, b_,
                    {[&](int node, const char* suffix) {
                       return params_.at(m_.nodes[node].name + "." + suffix);
                     },
                     [](int, const char*) { return -1; }})
            .forward(input_, val_[i], false);
        continue;
      }
      std::vector<Arg> args;
      if (n.op == OpKind::add || n.op == OpKind::concat) {
        for (size_t k = 0; k < n.inputs.size(); ++k)
          args.push_back({"x" + std::to_string(k), value(n.inputs[k])});
      } else {
        args.push_back({"x", value(n.inputs[0])});
      }
      add_params(int(i));
      for (const ParamSpec& ps : m_.params(int(i))) {
        std::string role = ps.suffix;
        if (n.op != OpKind::batchnorm) role = ps.suffix == "weight" ? "w" : "b";
        args.push_back({role, params_.at(n.name + "." + ps.suffix)});
      }
      args.push_back({"y", val_[i]});
      const Step s = step(forward_fn(n.op), int(i), std::move(args));
      if (n.op == OpKind::concat) {
        std::vector<int64_t> channels;
        for (int r : n.inputs)
          channels.push_back(m_.shape_of(r)[1]);
        for (const Step& part : concat_chunks(s, channels))
          b_.step(part);
      } else {
        b_.step(s);
      }
    }
    for (int o : m_.outputs)
      b_.plan().outputs.push_back(val_[o]);
  }

  const Model& m_;
  LowerOptions o_;
  PlanBuilder b_;
  int input_ = -1;
  std::vector<int> val_;
  std::map<std::string, int> params_;
};

} // namespace

Plan lower_model(const Model& m, const LowerOptions& o) {
  return finish_plan(lower_model_steps(m, o));
}

Plan lower_model_steps(const Model& m, const LowerOptions& o) {
  if (!o.train) return Lowering(m, o).build();
  const TrainingGraph g(m, o);
  return g.lower(g.store_all_order());
}

} // namespace kiln
