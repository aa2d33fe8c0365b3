#include "generator/select/families/spatial/spatial_common.hpp"

#include "generator/select/families/launch_shape.hpp"

#include <fmt/format.h>

namespace kiln::spatial {

std::optional<StepTypes> step_types(const StepInfo& s, std::string_view out) {
  const Buffer& o = s.arg(out);
  if (o.dtype != DType::f32 && o.dtype != DType::f16 && o.dtype != DType::bf16) return {};
  for (const Arg& a : s.step.args)
    if (s.plan.buffers[a.buffer].dtype != o.dtype) return {};
  return StepTypes{o.dtype, o.layout};
}

void require_layout(Variant& v, const StepInfo& s, Layout layout) {
  for (const Arg& a : s.step.args)
    if (s.plan.buffers[a.buffer].shape.size() == 4) v.layouts.push_back({a.role, layout});
}

bool indexable(const Shape& s) {
  constexpr int64_t kMax = 2147483647;
  if (s.size() != 4) return false;
  for (int64_t d : s)
    if (d <= 0 || d > kMax) return false;
  return s[1] * s[2] <= kMax && s[1] * s[2] * s[3] <= kMax;
}

std::string shape_tag(const Shape& s) {
  return fmt::format("n{}c{}h{}w{}", s[0], s[1], s[2], s[3]);
}

std::string window_tag(const Attrs& a) {
  return fmt::format("k{}x{}s{}x{}p{}x{}{}", a.kernel[0], a.kernel[1], a.stride[0], a.stride[1],
                     a.padding[0], a.padding[1], padding_end_tag(a));
}

std::string layout_tag(Layout l) { return std::string(layout_name(l)); }

int64_t pow2_ceil(int64_t x) {
  int64_t p = 1;
  while (p < x)
    p *= 2;
  return p;
}

int64_t smem_array(int64_t bytes) { return (bytes + 15) / 16 * 16; }

int registers(const StepInfo& s, int sm80, int sm75) { return s.cc() >= 80 ? sm80 : sm75; }

int64_t index_bytes(int64_t count) { return count > 2147483647 ? 8 : 4; }

Variant make_variant(const StepInfo& s, const std::string& family, const std::string& header,
                     const std::string& function, const std::string& name) {
  Variant v;
  v.family = family;
  v.header = header;
  v.function = function;
  v.name = name + "_" + s.arch_tag();
  v.math = Math::fp32; // every storage type computes in fp32
  return v;
}

void grid_stride(Variant& v, const StepInfo& s, int64_t count) {
  v.block = {kThreads, 1, 1};
  v.grid = {grid_stride_blocks(s.gpu, count, kThreads), 1, 1};
}

} // namespace kiln::spatial
