#include "generator/lower/op_lowering.hpp"

#include "generator/lower/steps.hpp"

namespace kiln {

Step BackwardSite::step(Fn fn, std::vector<Arg> args) const {
  Step s = node_step(model().nodes[size_t(node())], fn, std::move(args));
  s.attrs = attrs();
  return s;
}

std::vector<Arg> forward_args(const Model& m, int n, const std::vector<int>& inputs, bool train,
                              const std::function<int(const std::string&)>& param, int y) {
  const Node& nd = m.nodes[size_t(n)];
  const OpLowering& rules = op_lowering(nd.op);
  std::vector<Arg> args;
  if (op_arity(nd.op).variadic || op_arity(nd.op).min > 1) {
    for (size_t k = 0; k < inputs.size(); ++k)
      args.push_back({"x" + std::to_string(k), inputs[k]});
  } else {
    args.push_back({"x", inputs.at(0)});
  }
  for (const ParamSpec& ps : m.params(n)) {
    if (train && !ps.trainable) continue; // running statistics are unused in training
    const std::string role = rules.params_by_suffix ? ps.suffix : ps.suffix == "weight" ? "w" : "b";
    args.push_back({role, param(ps.suffix)});
  }
  args.push_back({"y", y});
  return args;
}

} // namespace kiln
