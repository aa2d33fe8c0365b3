// Command-line overrides of a model's input (--batch, --image, --dtype), applied before
// anything else sees the model; shapes are inferred again.
#pragma once

#include "generator/model/model.hpp"

#include <optional>

namespace kiln {

struct ModelOverrides {
  std::optional<int64_t> batch;
  std::optional<Int2> image; // [h, w]
  std::optional<DType> dtype;
};

// "224x160" or "224" (square); throws kiln::Error on anything else.
Int2 parse_image_size(std::string_view text);

void apply_overrides(Model& m, const ModelOverrides& o);

} // namespace kiln
