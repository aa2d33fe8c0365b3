#include "generator/rewrite/conv_pool.hpp"

#include "generator/cost/rewrite_pays.hpp"
#include "generator/rewrite/readers.hpp"
#include "generator/select/select.hpp"

namespace kiln {

namespace {

bool fusable_conv(const Plan& p, const Step& s) {
  return s.fn == Fn::conv2d_forward && s.kind != StepKind::free && !s.accumulate &&
         s.sparse.guard == Guard::none && s.arg("residual") < 0 && s.arg("y_values") < 0 &&
         p.buffers[s.need("y")].role == BufferRole::activation &&
         p.buffers[s.need("y")].view_of < 0;
}

} // namespace

std::vector<ConvPoolDecision> plan_conv_pool(Plan& p, const GpuDesc& g) {
  std::vector<ConvPoolDecision> out;
  if (p.train) return out; // the backward pass reads the conv's output and the pool's input
  for (Phase& ph : p.phases) {
    std::vector<Step>& steps = ph.steps;
    for (size_t i = 0; i < steps.size(); ++i) {
      if (!fusable_conv(p, steps[i])) continue;
      const int y = steps[i].need("y");
      const std::vector<size_t> r = readers(p, steps, y, i);
      if (r.size() != 1 || r[0] == SIZE_MAX) continue;
      const Step& pool = steps[r[0]];
      if (pool.fn != Fn::maxpool2d_forward || pool.kind == StepKind::free || pool.accumulate ||
          pool.args.size() != 2 || pool.need("x") != y || r[0] < i)
        continue;
      Step fused = steps[i];
      fused.fn = Fn::conv2d_pool_forward;
      fused.params = FusedPool{pool.attrs};
      fused.node = steps[i].node + "+" + pool.node;
      for (Arg& a : fused.args)
        if (a.role == "y") a.buffer = pool.need("y");
      ConvPoolDecision d;
      d.node = fused.node;
      d.separate_us = kernel_estimate_us({p, steps[i], g}) + kernel_estimate_us({p, pool, g});
      d.fused_us = kernel_estimate_us({p, fused, g});
      if (!rewrite_pays(d.separate_us, d.fused_us)) continue;
      // The fused step takes the pool's place (its inputs are ready there: the conv's were).
      steps[r[0]] = std::move(fused);
      steps.erase(steps.begin() + long(i));
      --i;
      out.push_back(d);
    }
  }
  return out;
}

} // namespace kiln
