// The sparse group's template families (templates/conv/sparse*.cuh), seen from the
// generator: activation-sparse convolutions and the compaction they read (DESIGN.md 5.4).
#pragma once

#include "generator/select/family.hpp"

namespace kiln {

// conv/sparse_compact.cuh: sparse.compact, and relu.forward / batchnorm.forward (inference)
// steps that compact their own output (the producer's kernel writes y and its compacted
// form in one pass).
class SparseCompactFamily final : public Family {
public:
  std::string_view name() const override { return "sparse_compact"; }
  std::vector<Variant> candidates(const StepInfo& s) const override;
};

// conv/sparse.cuh: conv2d.forward_sparse (any kernel, stride, padding, dilation, groups;
// f32, f16, bf16 storage; fused bias, residual, relu), unguarded or on the sparse side of
// a dispatch.
class SparseConvFamily final : public Family {
public:
  std::string_view name() const override { return "conv2d_sparse"; }
  std::vector<Variant> candidates(const StepInfo& s) const override;
};

// conv/sparse_backward_weight.cuh: conv2d.backward_weight_sparse.
class SparseBackwardWeightFamily final : public Family {
public:
  std::string_view name() const override { return "conv2d_backward_weight_sparse"; }
  std::vector<Variant> candidates(const StepInfo& s) const override;
};

// conv/partial_sum.cuh: partial.sum (completing a split sparse weight gradient), unguarded
// or on the sparse side of a dispatch.
class PartialSumFamily final : public Family {
public:
  std::string_view name() const override { return "partial_sum"; }
  std::vector<Variant> candidates(const StepInfo& s) const override;
};

// The density a sparse step is costed at: the one it was planned for, else one half.
double planned_density(const Step& st);

// The efficiency to give a variant whose arithmetic runs at `compute_efficiency` of the
// peak while its memory traffic overlaps it at `memory_efficiency` of the bandwidth: the
// cost model divides the larger of the two floors by one efficiency, which would charge a
// memory-bound sparse kernel its (low) arithmetic efficiency.
double overlapped_efficiency(const GpuDesc& g, const Variant& v, double compute_efficiency,
                             double memory_efficiency = 0.7);

} // namespace kiln
