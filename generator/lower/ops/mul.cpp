// mul: input k's gradient is dy times the other input (summed over H and W for the
// broadcast [N, C, 1, 1] input); it reads both inputs. Not tiled: a tile of x0 pairs with
// all of a broadcast x1.
#include "generator/lower/ops/shared_rules.hpp"

namespace kiln::lowering {

extern const OpLowering mul_lowering{
    .op = OpKind::mul,
    .forward = Fn::mul_forward,
    .train_forward = Fn::mul_forward,
    .input_grad_reads_input = true,
    .input_grad =
        [](BackwardSite& site, int k, int dx, bool accumulate) {
          Step s = site.step(Fn::mul_backward,
                             {{"x", site.input(1 - k)}, {"dy", site.dy()}, {"dx", dx}});
          s.accumulate = accumulate;
          site.emit(std::move(s));
        },
    .tileable = [](const Node&, bool) { return false; },
};

} // namespace kiln::lowering
