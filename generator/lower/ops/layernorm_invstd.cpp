// layernorm_invstd: one step forward; its gradient recomputes each position's statistics
// from x (the forward keeps nothing else). Not tiled: it has no window a tiled conv segment
// gains from.
#include "generator/lower/ops/shared_rules.hpp"

namespace kiln::lowering {

namespace {

void input_grad(BackwardSite& site, int, int dx, bool accumulate) {
  Step s = site.step(Fn::layernorm_invstd_backward,
                     {{"x", site.input(0)}, {"dy", site.dy()}, {"dx", dx}});
  s.accumulate = accumulate;
  site.emit(std::move(s));
}

} // namespace

extern const OpLowering layernorm_invstd_lowering{
    .op = OpKind::layernorm_invstd,
    .forward = Fn::layernorm_invstd_forward,
    .train_forward = Fn::layernorm_invstd_forward,
    .input_grad_reads_input = true,
    .input_grad = input_grad,
    .tileable = [](const Node&, bool) { return false; },
};

} // namespace kiln::lowering
