// The reduce family (the reduce op's kernels in templates/dense/reduce.cuh).
#pragma once

#include "generator/select/family.hpp"

namespace kiln::dense {

// reduce_{sum,mean,max}.forward and .backward over any of C, H, W: a warp per output.
class ReduceFamily final : public Family {
public:
  std::string_view name() const override { return "reduce"; }
  std::vector<Variant> candidates(const StepInfo& s) const override;
};

} // namespace kiln::dense
