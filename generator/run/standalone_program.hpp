// A standalone program for one model on one GPU (kiln build): its plan and kernel images
// compiled into a C++ source, linked with only the runtime, the static CUDA runtime and,
// when the plan has library steps, cuDNN. Run it as BIN --input X.npy --output Y.npy.
#pragma once

#include "generator/emit/generate.hpp"
#include "generator/gpu/gpu_desc.hpp"
#include "generator/model/model.hpp"

#include <cstddef>
#include <cstdint>
#include <string>

namespace kiln {

struct ProgramOptions {
  // Where libkiln_runtime.a and its siblings are; empty: $KILN_RUNTIME_DIR, else beside the
  // running executable (a build tree's runtime/, or a bundle's lib/kiln).
  std::string runtime_dir;
  bool progress = false; // the compile's progress line
};

struct Program {
  int64_t bytes = 0; // of the executable
  size_t kernels = 0;
  bool cudnn = false; // linked
};

// Writes the executable `output` (atomically); a failing link is a kiln::Error with the
// linker's output.
Program build_program(const Model& m, const GpuDesc& g, const GenerateOptions& o,
                      const std::string& output, const ProgramOptions& po);

} // namespace kiln
