// space_to_depth: its gradient gathers each input element's one dy element (zero where the
// element fell outside the output).
#include "generator/lower/ops/shared_rules.hpp"

namespace kiln::lowering {

extern const OpLowering space_to_depth_lowering{
    .op = OpKind::space_to_depth,
    .forward = Fn::space_to_depth_forward,
    .train_forward = Fn::space_to_depth_forward,
    .input_grad =
        [](BackwardSite& site, int, int dx, bool accumulate) {
          Step s = site.step(Fn::space_to_depth_backward, {{"dy", site.dy()}, {"dx", dx}});
          s.accumulate = accumulate;
          site.emit(std::move(s));
        },
};

} // namespace kiln::lowering
