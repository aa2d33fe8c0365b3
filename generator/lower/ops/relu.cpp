// relu: its gradient reads its output (y > 0 where x > 0).
#include "generator/lower/ops/shared_rules.hpp"

namespace kiln::lowering {

extern const OpLowering relu_lowering{
    .op = OpKind::relu,
    .forward = Fn::relu_forward,
    .train_forward = Fn::relu_forward,
    .input_grad_reads_output = true,
    .input_grad =
        [](BackwardSite& site, int, int dx, bool accumulate) {
          Step s =
              site.step(Fn::relu_backward, {{"y", site.output()}, {"dy", site.dy()}, {"dx", dx}});
          s.accumulate = accumulate;
          site.emit(std::move(s));
        },
    .tileable = [](const Node& n, bool) { return n.shape.size() == 4; },
};

} // namespace kiln::lowering
