// The density of every conv2d layer's input over one forward pass of a model (kiln
// profile): the fraction of nonzero elements and its spread over tiles, as a
// kiln-profile/1 profile that plans the activation-sparse kernels (generator/model/
// profile.hpp). Runs on the cpu reference or the generated kernels (emu, gpu).
#pragma once

#include "generator/gpu/gpu_desc.hpp"
#include "generator/model/model.hpp"
#include "generator/model/profile.hpp"
#include "runtime/plan.hpp"
#include "runtime/tensor.hpp"

#include <cstdint>
#include <functional>
#include <string>

namespace kiln {

struct DensityOptions {
  std::string device = "cpu"; // cpu, emu or gpu
  GpuDesc gpu;                // the generated kernels' (emu, gpu)
  std::string model;          // the model's file or name (an ONNX file's own weights)
  std::string weights;        // .safetensors; default: an ONNX model's own, else seeded
  uint64_t seed = 0;
  std::string input;     // the input's file, recorded in the profile
  Int2 tile{8, 8};       // of the spread
  bool progress = false; // the compile's progress line
  // Given the plan about to run, the executor's step callback (progress); may be empty.
  std::function<std::function<void(const Phase&, size_t)>(const Plan&)> on_plan;
};

struct DensityRun {
  Profile profile;
  double seconds = 0; // of the forward pass
};

// `input` is the model's input batch. A model without a conv2d layer is a kiln::Error.
DensityRun measure_densities(const Model& m, const Tensor& input, const DensityOptions& o);

} // namespace kiln
