// softmax: its gradient reads its output.
#include "generator/lower/ops/shared_rules.hpp"

namespace kiln::lowering {

extern const OpLowering softmax_lowering{
    .op = OpKind::softmax,
    .forward = Fn::softmax_forward,
    .train_forward = Fn::softmax_forward,
    .input_grad_reads_output = true,
    .input_grad =
        [](BackwardSite& site, int, int dx, bool accumulate) {
          Step s = site.step(Fn::softmax_backward,
                             {{"y", site.output()}, {"dy", site.dy()}, {"dx", dx}});
          s.accumulate = accumulate;
          site.emit(std::move(s));
        },
};

} // namespace kiln::lowering
