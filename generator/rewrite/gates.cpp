#include "generator/rewrite/gates.hpp"

#include "generator/cost/rewrite_pays.hpp"
#include "generator/rewrite/readers.hpp"
#include "generator/select/select.hpp"

#include <cmath>

namespace kiln {

namespace {

// The conv forms whose kernels can read a gate (the split-K ones are the same kernel).
bool gateable_conv(const Step& s) {
  return (s.fn == Fn::conv2d_forward || s.fn == Fn::conv2d_forward_split ||
          s.fn == Fn::conv2d_forward_partial) &&
         s.kind != StepKind::free && !s.accumulate && s.sparse.guard == Guard::none &&
         s.arg("gate") < 0 && s.arg("y_values") < 0;
}

// A mul whose second input is a [N, C, 1, 1] gate of its first, [N, C, H, W].
bool is_gate(const Plan& p, const Step& s) {
  if (s.fn != Fn::mul_forward || s.kind == StepKind::free || s.accumulate) return false;
  const Shape &x = p.buffers[s.need("x0")].shape, &g = p.buffers[s.need("x1")].shape;
  return x.size() == 4 && x != g && g == Shape{x[0], x[1], 1, 1};
}

} // namespace

std::vector<GateDecision> plan_gates(Plan& p, const GpuDesc& g) {
  std::vector<GateDecision> out;
  if (p.train) return out; // the backward pass reads the gated activation
  for (Phase& ph : p.phases) {
    std::vector<Step>& steps = ph.steps;
    for (size_t i = 0; i < steps.size(); ++i) {
      if (!is_gate(p, steps[i])) continue;
      const Step& mul = steps[i];
      const int y = mul.need("y"), x = mul.need("x0"), gate = mul.need("x1");
      if (p.buffers[y].role != BufferRole::activation || p.buffers[y].view_of >= 0) continue;
      const std::vector<size_t> r = readers(p, steps, y, i);
      if (r.size() != 1 || r[0] == SIZE_MAX || r[0] < i) continue;
      const Step& conv = steps[r[0]];
      if (!gateable_conv(conv) || conv.need("x") != y) continue;
      Step fused = conv;
      for (Arg& a : fused.args)
        if (a.role == "x") a.buffer = x;
      fused.args.push_back({"gate", gate});
      fused.node = mul.node + "+" + conv.node;
      GateDecision d;
      d.node = fused.node;
      d.separate_us = kernel_estimate_us({p, mul, g}) + kernel_estimate_us({p, conv, g});
      d.fused_us = kernel_estimate_us({p, fused, g});
      if (!std::isfinite(d.fused_us) || !rewrite_pays(d.separate_us, d.fused_us)) continue;
      // The gated conv keeps the conv's place (its x and gate were ready at the mul's).
      steps[r[0]] = std::move(fused);
      steps.erase(steps.begin() + long(i));
      --i;
      out.push_back(d);
    }
  }
  return out;
}

} // namespace kiln
