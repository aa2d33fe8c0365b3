// What the commands that run a model once share (kiln run, kiln profile): the device
// options, the input file and the model it fixes, the generated kernels compiled for the
// emulator or the GPU with their backend, and binding the weights and the input.
#pragma once

#include "generator/cli/model_args.hpp"
#include "generator/emit/generate.hpp"
#include "generator/gpu/gpu_desc.hpp"
#include "runtime/backend.hpp"
#include "runtime/executor.hpp"
#include "runtime/tensor.hpp"

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

namespace kiln::cli {

struct DeviceArgs {
  std::string device = "cpu";
  std::string weights; // empty: seeded
  uint64_t seed = 0;
  std::string input;

  // --device, --weights, --seed and --input (required), in that order.
  void add_to(CLI::App* cmd);
};

// The input batch and the model it runs through: the input's shape sets the batch and the
// image size unless --batch or --image are given; any other mismatch is an error naming the
// input file. A folded model's batch is the images rounded up to a whole number of folds
// (said once on stderr).
struct ModelInput {
  Model model;
  Tensor input;       // padded with zero images to a whole number of folds (folded models)
  int64_t images = 0; // the images the input file holds (the outputs' rows to keep)
  std::string padding_note; // what the padding did, when there was any
};
ModelInput load_model_input(const ModelArgs& a, const std::string& input_path);

// The generated kernels of a configuration on `device` ("emu": host compiler and the
// emulator; "gpu": NVRTC, the CUDA backend and the cuDNN runner). Generated into a
// directory kept per configuration (reused once its plan exists) and compiled there (cached,
// so a repeated run compiles nothing).
struct GeneratedRun {
  std::string dir;
  Plan plan;
  std::unique_ptr<Backend> backend;
};
GeneratedRun prepare_generated(const Model& m, const GpuDesc& g, const GenerateOptions& o,
                               const std::string& device);

// Binds --weights (or an ONNX model's own weights, or the weights drawn from --seed) and
// writes the input.
void bind_weights_and_input(Executor& ex, const Plan& plan, const DeviceArgs& a,
                            const Tensor& input, const std::string& model);

} // namespace kiln::cli
