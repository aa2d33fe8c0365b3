// What the spatial families (pooling, upsampling, concatenation) share on the generator
// side: the step's element type and layout, limits of the templates' index arithmetic,
// name pieces and the common fields of a variant.
#pragma once

#include "generator/select/family.hpp"

#include <optional>
#include <string>
#include <vector>

namespace kiln::spatial {

inline constexpr int64_t kThreads = 256;

// The element type every float argument of the step shares (f32, f16 or bf16) and the
// layout its 4-D arguments take (the layout of `out`, the written argument); empty when
// the arguments mix element types or one is f64.
struct StepTypes {
  DType dtype;
  Layout layout;
};
std::optional<StepTypes> step_types(const StepInfo& s, std::string_view out);

// Requires every 4-D argument of the step in `layout` (the templates index one layout).
void require_layout(Variant& v, const StepInfo& s, Layout layout);

// True when a 4-D shape suits the templates' index arithmetic: positive sizes in int, one
// image (C*H*W) under 2^31 elements.
bool indexable(const Shape& s);

// Name pieces: "n2c3h7w9", "k3x3s2x2p1x1", "nchw" / "nhwc".
std::string shape_tag(const Shape& s);
std::string window_tag(const Attrs& a);
std::string layout_tag(Layout l);

int64_t pow2_ceil(int64_t x);
// Bytes a KILN_SHARED_ARRAY of `bytes` occupies (each array is 16-byte aligned).
int64_t smem_array(int64_t bytes);
// Registers per thread as ptxas assigns them to these templates: sm_80 and later, and
// sm_75 (which lets 256-thread blocks use 64 at no occupancy cost, and does).
int registers(const StepInfo& s, int sm80, int sm75);
// Bytes of the templates' element index type for a tensor of `count` elements.
int64_t index_bytes(int64_t count);

// A variant with the fields every spatial family fills the same way.
Variant make_variant(const StepInfo& s, const std::string& family, const std::string& header,
                     const std::string& function, const std::string& name);
// 1-D blocks of kThreads over `count` items with a grid-stride loop.
void grid_stride(Variant& v, const StepInfo& s, int64_t count);

} // namespace kiln::spatial
