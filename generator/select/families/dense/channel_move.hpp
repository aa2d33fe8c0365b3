// The channel-move family (templates/elementwise/channel_move.cuh).
#pragma once

#include "generator/select/family.hpp"

namespace kiln::dense {

// channel_shuffle.forward / .backward and channel_slice.forward / .backward: one thread per
// output element, nchw, nhwc and [N, C].
class ChannelMoveFamily final : public Family {
public:
  std::string_view name() const override { return "channel_move"; }
  std::vector<Variant> candidates(const StepInfo& s) const override;
};

} // namespace kiln::dense
