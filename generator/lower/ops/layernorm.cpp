// layernorm: its backward recomputes each position's statistics from x (the forward keeps
// nothing but x) while computing dx, and leaves them in two scratch buffers for the
// parameter gradients, a reduction over positions per channel: two steps, each one kernel.
// Not tiled: nothing gains from it that a tiled conv segment needs (it has no window).
#include "generator/lower/ops/shared_rules.hpp"

namespace kiln::lowering {

namespace {

// dx (fresh) and the statistics, then dweight and dbias from them.
void backward(BackwardSite& site, int dx) {
  const Model& m = site.model();
  const Node& n = m.nodes[size_t(site.node())];
  Shape st = m.shape_of(n.inputs[0]);
  st[1] = 1;
  const int mean = site.scratch("mean:" + n.name, st),
            invstd = site.scratch("invstd:" + n.name, st);
  site.emit(site.step(Fn::layernorm_backward, {{"x", site.input(0)},
                                               {"dy", site.dy()},
                                               {"weight", site.param("weight")},
                                               {"dx", dx},
                                               {"mean", mean},
                                               {"invstd", invstd}}));
  site.emit(site.step(Fn::layernorm_backward_params, {{"x", site.input(0)},
                                                      {"dy", site.dy()},
                                                      {"mean", mean},
                                                      {"invstd", invstd},
                                                      {"dweight", site.param_grad("weight")},
                                                      {"dbias", site.param_grad("bias")}}));
}

void input_grad(BackwardSite& site, int, int dx, bool accumulate) {
  if (!accumulate) return backward(site, dx);
  // The statistics are written fresh: an accumulated dx goes through a copy.
  const Model& m = site.model();
  const Node& n = m.nodes[size_t(site.node())];
  const int tmp = site.scratch("dtmp:" + n.name, m.shape_of(n.inputs[0]));
  backward(site, tmp);
  Step add = site.step(Fn::copy, {{"src", tmp}, {"dst", dx}});
  add.accumulate = true;
  site.emit(std::move(add));
}

// Only where no input gradient is computed (its steps write them otherwise): dx to scratch.
void param_grads(BackwardSite& site, bool) {
  const Model& m = site.model();
  const Node& n = m.nodes[size_t(site.node())];
  backward(site, site.scratch("dtmp:" + n.name, n.shape));
}

} // namespace

extern const OpLowering layernorm_lowering{
    .op = OpKind::layernorm,
    .forward = Fn::layernorm_forward,
    .train_forward = Fn::layernorm_forward,
    .params_by_suffix = true,
    .input_grad_reads_input = true,
    .params_with_input_grad = true,
    .input_grad = input_grad,
    .param_grads = param_grads,
    .tileable = [](const Node&, bool) { return false; },
};

} // namespace kiln::lowering
