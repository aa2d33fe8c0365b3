// The options every command that takes a MODEL accepts (DESIGN.md 4.5): the model (a file,
// kiln-model/1 JSON or ONNX, or a shipped model's name), --batch, --image and --dtype.
#pragma once

#include "generator/model/model.hpp"
#include "generator/model/overrides.hpp"

#include "runtime/tensor.hpp"

#include <CLI/CLI.hpp>
#include <map>
#include <string>
#include <vector>

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

// A shipped model by name (models/<name>.json compiled into kiln).
std::vector<std::string> shipped_model_names();
// A kiln-model/1 file, an ONNX file (`*.onnx`, imported in memory) or a shipped model.
Model load_model_or_shipped(const std::string& path_or_name);
// The weights an ONNX model file carries (its initializers, under kiln's parameter names);
// nullptr for any other model. Imported once per process.
const std::map<std::string, Tensor>* model_file_weights(const std::string& path_or_name);

} // namespace kiln::cli
