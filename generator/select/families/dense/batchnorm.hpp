// The batchnorm families (templates/dense/batchnorm_forward.cuh, batchnorm_train.cuh).
#pragma once

#include "generator/select/family.hpp"

namespace kiln::dense {

// batchnorm.forward (inference, running statistics, relu epilogue): elementwise, nchw,
// nhwc and [N, C].
class BatchnormForwardFamily final : public Family {
public:
  std::string_view name() const override { return "batchnorm_forward"; }
  std::vector<Variant> candidates(const StepInfo& s) const override;
};

// batchnorm.forward_train and batchnorm.backward: per-channel reductions, one block per
// channel (channel-major) or per group of channels (channels-last).
class BatchnormTrainFamily final : public Family {
public:
  std::string_view name() const override { return "batchnorm_train"; }
  std::vector<Variant> candidates(const StepInfo& s) const override;
};

// batchnorm.partials, and the channels-last forward_train and backward that read its chunk
// sums: many blocks per channel group (templates/dense/batchnorm_chunks.cuh).
class BatchnormChunksFamily final : public Family {
public:
  std::string_view name() const override { return "batchnorm_chunks"; }
  std::vector<Variant> candidates(const StepInfo& s) const override;
};

} // namespace kiln::dense
