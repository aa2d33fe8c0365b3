// Split-K forwards (conv2d.forward_partial, linear.forward_partial): x, w -> partial
// [S * N, ...] (float, y's layout), slice s holding the forward's sums over the range
// [split_k_begin(K, S, s), split_k_begin(K, S, s + 1)) of the reduction, no bias or
// epilogue; partial.sum completes y.
#pragma once

#include "runtime/ops/step_check.hpp"

namespace kiln {

namespace cpu {
template <class T> struct StepArgs;
}

void check_split_k(const StepCheck& c, bool conv);
// The in-kernel form (conv2d.forward_split, linear.forward_split): x, w, [b], [residual],
// tickets -> y (the epilogue), partial (workspace [S * N, ...] float, as above; what it holds
// afterwards is unspecified). tickets: i32 [T], one counter per output tile of the kernel
// (T at least its tile count), zero before the launch and again after it. The reference is
// the plain forward.
void check_split_in_kernel(const StepCheck& c, bool conv);
// The reference: slice s is the forward with every weight outside its k range zeroed (k =
// (kh * KW + kw) * C + c of a conv's OIHW weights; f of a linear's).
template <class T> void split_k_reference(const cpu::StepArgs<T>& c, bool conv);

} // namespace kiln
