// The linear families (templates/dense/gemm.cuh, linear_dot.cuh).
#pragma once

#include "generator/select/family.hpp"

namespace kiln::dense {

// linear.forward, linear.backward_data and linear.backward_weight as a tiled SIMT GEMM,
// in a few tile configurations.
class LinearGemmFamily final : public Family {
public:
  std::string_view name() const override { return "linear_gemm"; }
  std::vector<Variant> candidates(const StepInfo& s) const override;
};

// linear.forward with one block per output element: small outputs, long rows.
class LinearDotFamily final : public Family {
public:
  std::string_view name() const override { return "linear_dot"; }
  std::vector<Variant> candidates(const StepInfo& s) const override;
};

} // namespace kiln::dense
