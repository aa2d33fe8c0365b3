#include "generator/lower/lower.hpp"

#include "generator/lower/op_lowering.hpp"
#include "generator/lower/plan_builder.hpp"
#include "generator/lower/steps.hpp"
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

namespace {

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
    p.signal = m_.signal;
    return p;
  }

  int value(int ref) const { return ref == kModelInput ? input_ : val_[ref]; }

  void add_params(int i) { bind_node_params(b_, m_, i, false, params_); }
  int param(int node, const std::string& suffix) {
    return b_.plan().params[size_t(params_.at(m_.nodes[size_t(node)].name + "." + suffix))].buffer;
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
                    {[&](int node, const char* suffix) { return param(node, suffix); },
                     [](int, const char*) { return -1; }})
            .forward(input_, val_[i], false);
        continue;
      }
      std::vector<int> inputs;
      for (int r : n.inputs)
        inputs.push_back(value(r));
      add_params(int(i));
      const OpLowering& rules = op_lowering(n.op);
      const Step s =
          node_step(n, *rules.forward,
                    forward_args(
                        m_, int(i), inputs, false,
                        [&](const std::string& suffix) { return param(int(i), suffix); }, val_[i]));
      if (rules.split_forward) {
        for (const Step& part : rules.split_forward(s, m_, n))
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
  ParamIndex params_;
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
