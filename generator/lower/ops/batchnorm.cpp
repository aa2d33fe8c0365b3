// batchnorm: inference normalises with the running statistics, training with the batch's.
// Its backward recomputes the batch statistics from x (the forward keeps nothing but x)
// and writes dx, dweight and dbias in one step.
#include "generator/lower/ops/shared_rules.hpp"

namespace kiln::lowering {

namespace {

Step backward(BackwardSite& site, int dx) {
  return site.step(Fn::batchnorm_backward, {{"x", site.input(0)},
                                            {"dy", site.dy()},
                                            {"weight", site.param("weight")},
                                            {"dx", dx},
                                            {"dweight", site.param_grad("weight")},
                                            {"dbias", site.param_grad("bias")}});
}

void input_grad(BackwardSite& site, int, int dx, bool accumulate) {
  if (!accumulate) return site.emit(backward(site, dx));
  // dweight and dbias are written fresh: an accumulated dx goes through a copy.
  const Model& m = site.model();
  const Node& n = m.nodes[size_t(site.node())];
  const int tmp = site.scratch("dtmp:" + n.name, m.shape_of(n.inputs[0]));
  site.emit(backward(site, tmp));
  Step add = site.step(Fn::copy, {{"src", tmp}, {"dst", dx}});
  add.accumulate = true;
  site.emit(std::move(add));
}

// Only where no input gradient is computed (its step writes them otherwise): dx to scratch.
void param_grads(BackwardSite& site, bool) {
  const Model& m = site.model();
  const Node& n = m.nodes[size_t(site.node())];
  site.emit(backward(site, site.scratch("dtmp:" + n.name, n.shape)));
}

} // namespace

extern const OpLowering batchnorm_lowering{
    .op = OpKind::batchnorm,
    .forward = Fn::batchnorm_forward,
    .train_forward = Fn::batchnorm_forward_train,
    .params_by_suffix = true,
    .input_grad_reads_input = true,
    .params_with_input_grad = true,
    .input_grad = input_grad,
    .param_grads = param_grads,
    // Inference only: batch statistics span the whole image.
    .tileable = [](const Node& n, bool train) { return n.shape.size() == 4 && !train; },
};

} // namespace kiln::lowering
