// Which images of a large batch a kernel check compares with the reference. The device runs
// the whole batch and every element it writes is checked for NaN (outputs are poisoned
// first); an image-separable step (FnDef::per_image) has its reference computed, and its
// outputs compared, on a few images only: the first two (the first image boundary inside a
// tile), the last, and seeded others. A batch-256 3x3 conv in f64 took ~20 s of host time
// per variant, most of kiln bench's time per shape on an H100.
#pragma once

#include "runtime/plan.hpp"
#include "runtime/tensor.hpp"

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace kiln {

// The images a check of `s` compares (`picked`, ascending) of its `batch`, when `s` is
// image-separable and its batch is larger than `most` (> 0); `picked` empty: all of them (a
// small batch, a step that is not separable, or `most` 0).
struct SampledImages {
  std::vector<int64_t> picked;
  int64_t batch = 0;
};
SampledImages sampled_images(const Plan& p, const Step& s, int64_t most, uint64_t seed);

// Whether `role` of a step of `fn` is indexed by image first (FnDef::per_image).
bool per_image_role(Fn fn, std::string_view role);

// The images `images` of `t` (any layout whose outermost dimension is the image: both of
// kiln's), in that order.
Tensor images_of(const Tensor& t, std::span<const int64_t> images);

} // namespace kiln
