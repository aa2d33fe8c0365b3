// The layer-norm family (templates/dense/layernorm.cuh).
#pragma once

#include "generator/select/family.hpp"

namespace kiln::dense {

// layernorm.forward and layernorm.backward (a warp or a thread per position, as softmax),
// layernorm.backward_params (a block per channel or per group of channels, as batchnorm);
// layernorm_invstd.forward and .backward (per position, as layernorm's).
class LayernormFamily final : public Family {
public:
  std::string_view name() const override { return "layernorm"; }
  std::vector<Variant> candidates(const StepInfo& s) const override;
};

} // namespace kiln::dense
