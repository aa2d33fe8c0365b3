// linear: as conv2d, a 1x1 window over [N, features].
#include "generator/lower/ops/shared_rules.hpp"

namespace kiln::lowering {

namespace {

void input_grad(BackwardSite& site, int, int dx, bool accumulate) {
  Step s = site.step(Fn::linear_backward_data,
                     {{"dy", site.dy()}, {"w", site.param("weight")}, {"dx", dx}});
  s.accumulate = accumulate;
  site.emit(std::move(s));
}

void param_grads(BackwardSite& site, bool accumulate) {
  weight_and_bias_grads(site, Fn::linear_backward_weight, accumulate);
}

} // namespace

extern const OpLowering linear_lowering{
    .op = OpKind::linear,
    .forward = Fn::linear_forward,
    .train_forward = Fn::linear_forward,
    .input_grad = input_grad,
    .param_grads = param_grads,
};

} // namespace kiln::lowering
