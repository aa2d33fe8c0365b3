// Helpers shared by the dense group's families (batchnorm, linear, softmax, cross-entropy):
// the checks every one of them makes on a step and the pieces of their instance names.
#pragma once

#include "generator/select/family.hpp"

#include <cstdint>
#include <optional>
#include <string>

namespace kiln::dense {

// The one element type (f32, f16 or bf16) of every float argument of the step; nullopt
// when they differ or one is f64 (no kernel computes in f64). `except`: a role left out (a
// workspace of its own type).
std::optional<DType> common_dtype(const StepInfo& s, std::string_view except = {});

// The layout every 4-D argument of the step shares (nchw when none is 4-D); nullopt when
// 4-D arguments differ (a step with mixed layouts is left to a convert and another family).
std::optional<Layout> common_layout(const StepInfo& s);

// A tensor with a channel (class) axis 1 seen as [N, C, S], S the product of the rest.
struct Ncs {
  int64_t n = 0, c = 0, s = 1;
};
Ncs ncs(const Shape& x);

// Channel c of position (n, s) is contiguous with channel c + 1: 2-D tensors, nhwc, and any
// tensor without spatial extent.
bool channels_last(const Shape& x, Layout l);

// "n3c5h7w9" (4-D), "n3c5" (2-D), "n3c5s7" (other ranks), with `c` naming axis 1.
std::string shape_tag(const Shape& x, char c = 'c');
// "nchw" / "nhwc" for 4-D tensors, "nc" for 2-D, "ncs" for other ranks.
std::string layout_tag(const Shape& x, Layout l);

// Every kernel dimension the templates index with `int` must fit it.
inline bool fits_int(int64_t v) { return v >= 0 && v <= 2147483647LL; }

// The smallest power of two >= v (v >= 1).
int64_t next_pow2(int64_t v);

// Bytes a kernel moves reading a `bytes`-sized operand `times` times: once when it stays in
// L2 between the reads.
double reread_bytes(const GpuDesc& g, double bytes, double times);

// 4-D roles of the step with the layout l (a variant's `layouts` requirement).
std::vector<std::pair<std::string, Layout>> layouts_of(const StepInfo& s, Layout l);

} // namespace kiln::dense
