// upsample2d (nearest): its gradient sums dy over each source pixel's copies.
#include "generator/lower/ops/shared_rules.hpp"

namespace kiln::lowering {

extern const OpLowering upsample2d_lowering{
    .op = OpKind::upsample2d,
    .forward = Fn::upsample2d_forward,
    .train_forward = Fn::upsample2d_forward,
    .input_grad =
        [](BackwardSite& site, int, int dx, bool accumulate) {
          Step s = site.step(Fn::upsample2d_backward, {{"dy", site.dy()}, {"dx", dx}});
          s.accumulate = accumulate;
          site.emit(std::move(s));
        },
};

} // namespace kiln::lowering
