// Command-line overrides of a model's input (--batch, --image, --dtype), applied before
// anything else sees the model; shapes are inferred again.
#pragma once

#include "generator/model/model.hpp"

#include <optional>

namespace kiln {

struct ModelOverrides {
  std::optional<int64_t> batch;
  std::optional<Int2> image; // [h, w]
  // --image gave one size ("224"): a square image, or a 1-D signal model's length L (Lx1).
  bool image_one_size = false;
  std::optional<DType> dtype;
};

// "224x160" or "224" (square); throws kiln::Error on anything else.
Int2 parse_image_size(std::string_view text);
// --image: parse_image_size, and whether the text gave one size.
void set_image_size(ModelOverrides& o, std::string_view text);

void apply_overrides(Model& m, const ModelOverrides& o);

} // namespace kiln
