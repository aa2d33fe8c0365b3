// adaptive_avgpool2d and global_avgpool (its 1x1 case): one function computes both.
#include "generator/lower/ops/shared_rules.hpp"

namespace kiln::lowering {

namespace {

void input_grad(BackwardSite& site, int, int dx, bool accumulate) {
  Step s = site.step(Fn::adaptive_avgpool2d_backward, {{"dy", site.dy()}, {"dx", dx}});
  s.accumulate = accumulate;
  site.emit(std::move(s));
}

} // namespace

extern const OpLowering adaptive_avgpool2d_lowering{
    .op = OpKind::adaptive_avgpool2d,
    .forward = Fn::adaptive_avgpool2d_forward,
    .train_forward = Fn::adaptive_avgpool2d_forward,
    .input_grad = input_grad,
};

extern const OpLowering global_avgpool_lowering{
    .op = OpKind::global_avgpool,
    .forward = Fn::adaptive_avgpool2d_forward,
    .train_forward = Fn::adaptive_avgpool2d_forward,
    .input_grad = input_grad,
};

} // namespace kiln::lowering
