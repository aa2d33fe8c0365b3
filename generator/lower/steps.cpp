#include "generator/lower/steps.hpp"

#include "generator/model/param_ranges.hpp"

#include <tuple>

namespace kiln {

Step plain_step(Fn fn, std::string label, std::vector<Arg> args) {
  Step s;
  s.kind = StepKind::reference;
  s.fn = fn;
  s.params = default_params(fn);
  s.node = std::move(label);
  s.args = std::move(args);
  return s;
}

Step node_step(const Node& n, Fn fn, std::vector<Arg> args) {
  Step s = plain_step(fn, n.name, std::move(args));
  s.op = n.op;
  s.attrs = n.attrs;
  return s;
}

Step step_like(const Step& of, Fn fn, std::vector<Arg> args) {
  Step s = plain_step(fn, of.node, std::move(args));
  s.op = of.op;
  s.attrs = of.attrs;
  return s;
}

std::string input_buffer_name(const Model& m) { return "in:" + m.input_name; }
std::string act_name(const std::string& node) { return "act:" + node; }
std::string dact_name(const std::string& node) { return "dact:" + node; }
std::string param_buffer_name(const std::string& param) { return "param:" + param; }
std::string grad_buffer_name(const std::string& param) { return "grad:" + param; }

void bind_node_params(PlanBuilder& b, const Model& m, int node, bool trained, ParamIndex& index) {
  for (const ParamSpec& ps : m.params(node)) {
    const std::string pname = m.nodes[size_t(node)].name + "." + ps.suffix;
    const int buf = b.buffer(param_buffer_name(pname), ps.shape,
                             ps.trainable ? BufferRole::param : BufferRole::state);
    ParamBinding pb{pname, buf, -1, 0, 0};
    std::tie(pb.init_lo, pb.init_hi) = param_init_range(m, node, ps);
    if (ps.trainable && trained)
      pb.grad = b.buffer(grad_buffer_name(pname), ps.shape, BufferRole::param_grad);
    index[pname] = int(b.plan().params.size());
    b.plan().params.push_back(pb);
  }
}

} // namespace kiln
