// conv_transpose2d: its gradients are the functions of the conv2d it transposes
// (runtime/ops/conv_transpose2d.hpp): dx = that conv's forward of dy, dw = its weight
// gradient with the roles of x and dy exchanged, db as a conv's. The steps carry op conv2d and
// the conv's attributes, so every conv2d kernel family serves them.
#include "runtime/ops/conv_transpose2d.hpp"
#include "generator/lower/ops/shared_rules.hpp"

namespace kiln::lowering {

namespace {

Attrs conv_of(BackwardSite& site) {
  const Model& m = site.model();
  const Node& n = m.nodes[size_t(site.node())];
  return transposed_conv(site.attrs(), m.shape_of(n.inputs[0])[1]);
}

Step as_conv(BackwardSite& site, Fn fn, std::vector<Arg> args) {
  Step s = site.step(fn, std::move(args));
  s.op = OpKind::conv2d;
  s.attrs = conv_of(site);
  return s;
}

void input_grad(BackwardSite& site, int, int dx, bool accumulate) {
  // conv2d.forward writes its output fresh: an accumulated dx goes through a copy.
  const Model& m = site.model();
  const Node& n = m.nodes[size_t(site.node())];
  const int out = accumulate ? site.scratch("dtmp:" + n.name, m.shape_of(n.inputs[0])) : dx;
  site.emit(as_conv(site, Fn::conv2d_forward,
                    {{"x", site.dy()}, {"w", site.param("weight")}, {"y", out}}));
  if (!accumulate) return;
  Step add = site.step(Fn::copy, {{"src", out}, {"dst", dx}});
  add.accumulate = true;
  site.emit(std::move(add));
}

void param_grads(BackwardSite& site, bool accumulate) {
  Step w = as_conv(site, Fn::conv2d_backward_weight,
                   {{"x", site.dy()}, {"dy", site.input(0)}, {"dw", site.param_grad("weight")}});
  w.accumulate = accumulate;
  site.emit(std::move(w));
  if (site.attrs().bias) {
    Step b = site.step(Fn::bias_backward, {{"dy", site.dy()}, {"db", site.param_grad("bias")}});
    b.accumulate = accumulate;
    site.emit(std::move(b));
  }
}

} // namespace

extern const OpLowering conv_transpose2d_lowering{
    .op = OpKind::conv_transpose2d,
    .forward = Fn::conv_transpose2d_forward,
    .train_forward = Fn::conv_transpose2d_forward,
    .input_grad = input_grad,
    .param_grads = param_grads,
};

} // namespace kiln::lowering
