// channel_shuffle and channel_slice: data movement between channels. The shuffle's gradient
// is the inverse shuffle of dy; the slice's writes dy into its channels of dx (zeros in the
// others unless it accumulates into a gradient other readers add to).
#include "generator/lower/ops/shared_rules.hpp"

namespace kiln::lowering {

namespace {

template <Fn Backward> void move_back(BackwardSite& site, int, int dx, bool accumulate) {
  Step s = site.step(Backward, {{"dy", site.dy()}, {"dx", dx}});
  s.accumulate = accumulate;
  site.emit(std::move(s));
}

} // namespace

extern const OpLowering channel_shuffle_lowering{
    .op = OpKind::channel_shuffle,
    .forward = Fn::channel_shuffle_forward,
    .train_forward = Fn::channel_shuffle_forward,
    .input_grad = move_back<Fn::channel_shuffle_backward>,
};

extern const OpLowering channel_slice_lowering{
    .op = OpKind::channel_slice,
    .forward = Fn::channel_slice_forward,
    .train_forward = Fn::channel_slice_forward,
    .input_grad = move_back<Fn::channel_slice_backward>,
};

} // namespace kiln::lowering
