// hardswish (x * relu6(x + 3) / 6, MobileNetV3's activation): its gradient reads its input.
#include "generator/lower/ops/shared_rules.hpp"

namespace kiln::lowering {

extern const OpLowering hardswish_lowering{
    .op = OpKind::hardswish,
    .forward = Fn::hardswish_forward,
    .train_forward = Fn::hardswish_forward,
    .input_grad_reads_input = true,
    .input_grad =
        [](BackwardSite& site, int, int dx, bool accumulate) {
          Step s = site.step(Fn::hardswish_backward,
                             {{"x", site.input(0)}, {"dy", site.dy()}, {"dx", dx}});
          s.accumulate = accumulate;
          site.emit(std::move(s));
        },
    .tileable = [](const Node& n, bool) { return n.shape.size() == 4; },
};

} // namespace kiln::lowering
