#include "generator/rewrite/batchnorm_activation.hpp"

#include "generator/lower/plan_builder.hpp"
#include "generator/rewrite/readers.hpp"
#include "runtime/ops/registry.hpp"

namespace kiln {

namespace {

// The one step other than (ph, i) that names buffer b, as (phase, step); (-1, -1) where none
// or several do, or something else holds b.
std::pair<int, int> sole_other(const Plan& p, int b, size_t ph, size_t i) {
  if (held_beyond_steps(p, b)) return {-1, -1};
  std::pair<int, int> found{-1, -1};
  const std::vector<std::vector<Use>> uses = buffer_uses(p, false); // (alive for the loop)
  for (const Use& u : uses[size_t(b)]) {
    if (u.phase == ph && u.step == i) continue;
    const std::pair<int, int> at{int(u.phase), int(u.step)};
    if (found.first >= 0 && found != at) return {-1, -1};
    found = at;
  }
  return found;
}

} // namespace

std::vector<std::string> fuse_batchnorm_activations(Plan& p) {
  std::vector<std::string> out;
  if (!p.train) return out;
  for (size_t ph = 0; ph < p.phases.size(); ++ph) {
    std::vector<Step>& steps = p.phases[ph].steps;
    for (size_t i = 0; i < steps.size(); ++i) {
      Step& bn = steps[i];
      if (bn.kind == StepKind::free || bn.fn != Fn::batchnorm_forward_train ||
          bn.arg("partial") < 0 || bn.epilogue.activation != Activation::none)
        continue;
      const int y = bn.need("y");
      if (is_persistent(p.buffers[size_t(y)].role)) continue;
      const auto [q, j] = sole_other(p, y, ph, i);
      if (q != int(ph) || j <= int(i)) continue;
      const Step& act = steps[size_t(j)];
      const auto activation = fn_def(act.fn).activation;
      if (!activation || act.accumulate || act.args.size() != 2 || act.need("x") != y) continue;
      const Activation a = activation(act.attrs);
      if (a == Activation::none) continue;
      bn.epilogue.activation = a;
      for (Arg& arg : bn.args)
        if (arg.role == "y") arg.buffer = act.need("y");
      bn.node += "+" + act.node;
      out.push_back(bn.node);
      // The fused step stays where the batchnorm was (what it writes beside y keeps its
      // readers' order); nothing before the activation read what it wrote, its producer.
      steps.erase(steps.begin() + long(j));
    }
  }
  return out;
}

} // namespace kiln
