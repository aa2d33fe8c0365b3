// pad: its gradient adds dy into each element's source (the padded border of a constant pad
// has none).
#include "generator/lower/ops/shared_rules.hpp"

namespace kiln::lowering {

extern const OpLowering pad_lowering{
    .op = OpKind::pad,
    .forward = Fn::pad_forward,
    .train_forward = Fn::pad_forward,
    .input_grad =
        [](BackwardSite& site, int, int dx, bool accumulate) {
          Step s = site.step(Fn::pad_backward, {{"dy", site.dy()}, {"dx", dx}});
          s.accumulate = accumulate;
          site.emit(std::move(s));
        },
};

} // namespace kiln::lowering
