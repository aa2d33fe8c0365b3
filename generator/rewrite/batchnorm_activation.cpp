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

// The activation of step j of `steps` if it is one that reads x and writes y alone, else none.
Activation activation_step(const std::vector<Step>& steps, int j, int x) {
  const Step& act = steps[size_t(j)];
  const auto activation = fn_def(act.fn).activation;
  if (!activation || act.accumulate || act.args.size() != 2 || act.need("x") != x)
    return Activation::none;
  return activation(act.attrs);
}

// The fusion of step i, a chunked batchnorm.forward_train: the activation alone after it
// ({j, none}), or an add of y and another tensor r then the activation ({j, k, r}).
struct Chain {
  int add = -1, act = -1, residual = -1;
  Activation a = Activation::none;
};

Chain chain_after(const Plan& p, const std::vector<Step>& steps, size_t ph, size_t i, int y) {
  const auto [q, j] = sole_other(p, y, ph, i);
  if (q != int(ph) || j <= int(i)) return {};
  if (const Activation a = activation_step(steps, j, y); a != Activation::none)
    return {-1, j, -1, a};
  // relu(bn(x) + r), a resnet's block end: r must hold its value at the batchnorm already.
  const Step& add = steps[size_t(j)];
  if (add.fn != Fn::add_forward || add.accumulate || add.args.size() != 3) return {};
  const int x0 = add.need("x0"), x1 = add.need("x1"), s = add.need("y");
  if ((x0 == y) == (x1 == y)) return {};
  const int r = x0 == y ? x1 : x0;
  if (is_persistent(p.buffers[size_t(s)].role) || written_between(steps, i, size_t(j), r))
    return {};
  const auto [q2, k] = sole_other(p, s, ph, size_t(j));
  if (q2 != int(ph) || k <= j) return {};
  const Activation a = activation_step(steps, k, s);
  if (a == Activation::none) return {};
  return {j, k, r, a};
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
          bn.arg("partial") < 0 || bn.epilogue.activation != Activation::none ||
          bn.arg("residual") >= 0)
        continue;
      const int y = bn.need("y");
      if (is_persistent(p.buffers[size_t(y)].role)) continue;
      const Chain c = chain_after(p, steps, ph, i, y);
      if (c.act < 0) continue;
      bn.epilogue.activation = c.a;
      for (Arg& arg : bn.args)
        if (arg.role == "y") arg.buffer = steps[size_t(c.act)].need("y");
      if (c.add >= 0) {
        bn.args.push_back(Arg{"residual", c.residual});
        bn.node += "+" + steps[size_t(c.add)].node;
      }
      bn.node += "+" + steps[size_t(c.act)].node;
      out.push_back(bn.node);
      // The fused step stays where the batchnorm was (what it writes beside y keeps its
      // readers' order); nothing before the activation read what it wrote, its producer,
      // nor the add's sum.
      steps.erase(steps.begin() + long(c.act));
      if (c.add >= 0) steps.erase(steps.begin() + long(c.add));
    }
  }
  return out;
}

} // namespace kiln
