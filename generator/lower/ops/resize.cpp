// resize (nearest or bilinear): its gradient adds dy into the taps each output read.
#include "generator/lower/ops/shared_rules.hpp"

namespace kiln::lowering {

extern const OpLowering resize_lowering{
    .op = OpKind::resize,
    .forward = Fn::resize_forward,
    .train_forward = Fn::resize_forward,
    .input_grad =
        [](BackwardSite& site, int, int dx, bool accumulate) {
          Step s = site.step(Fn::resize_backward, {{"dy", site.dy()}, {"dx", dx}});
          s.accumulate = accumulate;
          site.emit(std::move(s));
        },
};

} // namespace kiln::lowering
