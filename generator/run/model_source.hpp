// Where a model comes from: a kiln-model/1 file, an ONNX file (imported in memory, its
// initializers its weights) or the name of a model shipped inside kiln (models/*.json).
#pragma once

#include "generator/model/model.hpp"
#include "runtime/tensor.hpp"

#include <map>
#include <string>
#include <vector>

namespace kiln {

// The shipped models' names (models/<name>.json compiled into kiln).
std::vector<std::string> shipped_model_names();
// A kiln-model/1 file, an ONNX file (`*.onnx`) or a shipped model; a name that is none of
// them is a kiln::Error listing the shipped ones.
Model load_model_or_shipped(const std::string& path_or_name);
// The weights an ONNX model file carries (its initializers, under kiln's parameter names);
// nullptr for any other model. Imported once per process.
const std::map<std::string, Tensor>* model_file_weights(const std::string& path_or_name);

} // namespace kiln
