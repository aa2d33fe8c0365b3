// The generated kernels of a configuration, ready to run in this process: generated into a
// directory kept per configuration in the cache (reused once its plan exists), compiled
// there for the device (cached, so a repeated run compiles nothing) and loaded into its
// backend: "emu" (host compiler, the CUDA emulator) or "gpu" (NVRTC, the CUDA backend with
// the cuDNN runner).
#pragma once

#include "generator/emit/generate.hpp"
#include "generator/gpu/gpu_desc.hpp"
#include "runtime/backend.hpp"
#include "runtime/plan.hpp"

#include <memory>
#include <string>

namespace kiln {

struct GeneratedRun {
  std::string dir;
  Plan plan;
  std::unique_ptr<Backend> backend;
};

// `progress`: the compile's progress line (runtime/progress.hpp).
GeneratedRun prepare_generated(const Model& m, const GpuDesc& g, const GenerateOptions& o,
                               const std::string& device, bool progress);

} // namespace kiln
