// A model and the input batch it runs on: the input's shape sets the batch and the image
// size unless the overrides fix them; a folded model takes any number of images, its last
// fold filled with zero images. Then the weights a run starts from.
#pragma once

#include "generator/model/model.hpp"
#include "generator/model/overrides.hpp"
#include "runtime/executor.hpp"
#include "runtime/tensor.hpp"

#include <cstdint>
#include <string>

namespace kiln {

struct ModelInput {
  Model model;
  Tensor input;             // padded with zero images to a whole number of folds (folded models)
  int64_t images = 0;       // the images the input file holds (the outputs' rows to keep)
  std::string padding_note; // what the padding did, when there was any
};

// Reads `input_path` (.npy floats) and loads `model` (model_source.hpp) with the overrides
// and the input's shape; any other mismatch is a kiln::Error naming the input file.
ModelInput load_model_input(const std::string& model, const ModelOverrides& overrides,
                            const std::string& input_path);

// Binds the parameters a run starts from: the `weights_file` (.safetensors) when given, else
// an ONNX model's own initializers, else weights drawn from `seed`.
void bind_initial_weights(Executor& ex, const Plan& plan, const std::string& weights_file,
                          const std::string& model, uint64_t seed);

} // namespace kiln
