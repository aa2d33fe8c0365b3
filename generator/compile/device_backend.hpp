// A generated directory compiled for the device that runs it, and backends opened on it:
// "emu" compiles with the host compiler into one shared object the emulator loads; "gpu"
// compiles cubins with NVRTC and opens a CUDA backend with the cuDNN runner for library
// steps. One place for kiln check, kiln run/train on emu and gpu, and the bench sweeps.
#pragma once

#include "runtime/backend.hpp"
#include "runtime/cuda/backend.hpp"
#include "runtime/emu/backend.hpp"

#include <memory>
#include <string>

namespace kiln {

struct DeviceBackendOptions {
  bool progress = false; // the compile's progress line
  EmuOptions emu;        // emu: checks and workers
  CudaOptions cuda;      // gpu: device, CUDA graphs
};

// Compiles `dir` for `device` (cached: only what changed is rebuilt) and returns the
// factory of its backends. Throws CompileFailed, or kiln::Error for another device name.
BackendFactory compiled_backends(const std::string& dir, const std::string& device,
                                 const DeviceBackendOptions& o = {});

// The factory of CUDA backends (with the cuDNN runner) on a directory compile_dir has
// compiled, without compiling: the same kernels opened with other options (the sweep checks
// launch by launch and times under CUDA graphs).
BackendFactory cuda_backends(const std::string& dir, const CudaOptions& o);

} // namespace kiln
