// The softmax families (templates/dense/softmax.cuh, softmax_xent.cuh).
#pragma once

#include "generator/select/family.hpp"

namespace kiln::dense {

// softmax.forward and softmax.backward over axis 1 (any rank >= 2; nchw and nhwc).
class SoftmaxFamily final : public Family {
public:
  std::string_view name() const override { return "softmax"; }
  std::vector<Variant> candidates(const StepInfo& s) const override;
};

// softmax_xent.forward (probabilities and the mean loss) and softmax_xent.backward.
class SoftmaxXentFamily final : public Family {
public:
  std::string_view name() const override { return "softmax_xent"; }
  std::vector<Variant> candidates(const StepInfo& s) const override;
};

} // namespace kiln::dense
