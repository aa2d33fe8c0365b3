// conv2d: dx from the weights (backward_data), dw and db from the input (backward_weight).
#include "generator/lower/ops/shared_rules.hpp"

namespace kiln::lowering {

namespace {

void input_grad(BackwardSite& site, int, int dx, bool accumulate) {
  Step s = site.step(Fn::conv2d_backward_data,
                     {{"dy", site.dy()}, {"w", site.param("weight")}, {"dx", dx}});
  s.accumulate = accumulate;
  site.emit(std::move(s));
}

void param_grads(BackwardSite& site, bool accumulate) {
  weight_and_bias_grads(site, Fn::conv2d_backward_weight, accumulate);
}

} // namespace

extern const OpLowering conv2d_lowering{
    .op = OpKind::conv2d,
    .forward = Fn::conv2d_forward,
    .train_forward = Fn::conv2d_forward,
    .input_grad = input_grad,
    .param_grads = param_grads,
    .tileable = [](const Node& n, bool) { return windowed_tileable(n); },
    .window = conv_window,
};

} // namespace kiln::lowering
