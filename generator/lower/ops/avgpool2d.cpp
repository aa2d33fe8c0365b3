// avgpool2d: its gradient spreads dy over each window; it reads nothing else.
#include "generator/lower/ops/shared_rules.hpp"

namespace kiln::lowering {

extern const OpLowering avgpool2d_lowering{
    .op = OpKind::avgpool2d,
    .forward = Fn::avgpool2d_forward,
    .train_forward = Fn::avgpool2d_forward,
    .input_grad =
        [](BackwardSite& site, int, int dx, bool accumulate) {
          Step s = site.step(Fn::avgpool2d_backward, {{"dy", site.dy()}, {"dx", dx}});
          s.accumulate = accumulate;
          site.emit(std::move(s));
        },
    .tileable = [](const Node& n, bool) { return windowed_tileable(n) && !n.attrs.ceil_mode; },
    .window = pool_window,
};

} // namespace kiln::lowering
