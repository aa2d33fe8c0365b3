// Batches of a folded model (FoldedCNNs: f images stacked along channels) as the user sees
// them: N images of the unfolded shape in, N rows out. When N is no multiple of f the last
// fold is filled with zero images and their rows are dropped; the fold and unfold themselves
// are views (the plan's input buffer [N', C, H, W] is viewed as [N'/f, f*C, H, W]).
#pragma once

#include "runtime/plan.hpp"
#include "runtime/tensor.hpp"

namespace kiln {

// The fold factor of a plan whose input is folded: f of its [N/f, f*C, H, W] view of the
// input; 1 when the plan does not fold.
int64_t plan_fold_factor(const Plan& p);

// x [n, ...] padded with zero images to `batch` >= n images.
Tensor pad_batch(const Tensor& x, int64_t batch);

// The first n rows (along the first axis) of y.
Tensor first_rows(const Tensor& y, int64_t n);

} // namespace kiln
