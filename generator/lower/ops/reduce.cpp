// reduce_sum, reduce_mean, reduce_max: one step forward, one backward. The sum's and the
// mean's gradients spread dy over each output's elements and read nothing else; the max's
// finds each output's first maximum again from x (the forward keeps no indices). Not tiled:
// an output may depend on a whole image.
#include "generator/lower/ops/shared_rules.hpp"

namespace kiln::lowering {

namespace {

template <Fn Backward> void spread(BackwardSite& site, int, int dx, bool accumulate) {
  Step s = Backward == Fn::reduce_max_backward
               ? site.step(Backward, {{"x", site.input(0)}, {"dy", site.dy()}, {"dx", dx}})
               : site.step(Backward, {{"dy", site.dy()}, {"dx", dx}});
  s.accumulate = accumulate;
  site.emit(std::move(s));
}

} // namespace

extern const OpLowering reduce_sum_lowering{
    .op = OpKind::reduce_sum,
    .forward = Fn::reduce_sum_forward,
    .train_forward = Fn::reduce_sum_forward,
    .input_grad = spread<Fn::reduce_sum_backward>,
};

extern const OpLowering reduce_mean_lowering{
    .op = OpKind::reduce_mean,
    .forward = Fn::reduce_mean_forward,
    .train_forward = Fn::reduce_mean_forward,
    .input_grad = spread<Fn::reduce_mean_backward>,
};

extern const OpLowering reduce_max_lowering{
    .op = OpKind::reduce_max,
    .forward = Fn::reduce_max_forward,
    .train_forward = Fn::reduce_max_forward,
    .input_grad_reads_input = true,
    .input_grad = spread<Fn::reduce_max_backward>,
};

} // namespace kiln::lowering
