// maxpool2d: its gradient reads its input (where each window's maximum was).
#include "generator/lower/ops/shared_rules.hpp"

namespace kiln::lowering {

extern const OpLowering maxpool2d_lowering{
    .op = OpKind::maxpool2d,
    .forward = Fn::maxpool2d_forward,
    .train_forward = Fn::maxpool2d_forward,
    .input_grad_reads_input = true,
    .input_grad =
        [](BackwardSite& site, int, int dx, bool accumulate) {
          Step s = site.step(Fn::maxpool2d_backward,
                             {{"x", site.input(0)}, {"dy", site.dy()}, {"dx", dx}});
          s.accumulate = accumulate;
          site.emit(std::move(s));
        },
    .tileable = [](const Node& n, bool) { return windowed_tileable(n) && !n.attrs.ceil_mode; },
    .window = pool_window,
};

} // namespace kiln::lowering
