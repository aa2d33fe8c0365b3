// The options every command that takes a MODEL accepts (DESIGN.md 4.5): the model (a file,
// kiln-model/1 JSON or ONNX, or a shipped model's name: generator/run/model_source.hpp),
// --batch, --image and --dtype.
#pragma once

#include "generator/model/model.hpp"
#include "generator/model/overrides.hpp"

#include <CLI/CLI.hpp>
#include <string>

namespace kiln::cli {

struct ModelArgs {
  std::string model;
  int64_t batch = 0;
  std::string image;
  std::string dtype;

  void add_to(CLI::App* cmd, bool model_optional = false);
  bool batch_given() const { return batch != 0; }
  bool image_given() const { return !image.empty(); }
  ModelOverrides overrides() const;
  // Loads the model and applies the overrides.
  Model load() const;
};

} // namespace kiln::cli
