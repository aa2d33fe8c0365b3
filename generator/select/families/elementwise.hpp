#pragma once

#include "generator/select/family.hpp"

namespace kiln {

// relu, relu backward, add, copy (accumulating or not), fill_zero, the optimizer updates (SGD
// with weight decay and momentum, Adam) and the MSE loss of distillation (mse_loss.cuh).
class ElementwiseFamily final : public Family {
public:
  std::string_view name() const override { return "elementwise"; }
  std::vector<Variant> candidates(const StepInfo& s) const override;
};

// Windows of 4-D tensors copied or accumulated (tiles of tiled segments).
class RegionCopyFamily final : public Family {
public:
  std::string_view name() const override { return "region_copy"; }
  std::vector<Variant> candidates(const StepInfo& s) const override;
};

// Layout (nchw <-> nhwc) and element-type conversion.
class ConvertFamily final : public Family {
public:
  std::string_view name() const override { return "convert"; }
  std::vector<Variant> candidates(const StepInfo& s) const override;
};

} // namespace kiln
