#include "generator/compile/device_backend.hpp"

#include "generator/compile/compile_dir.hpp"
#include "runtime/cuda/cudnn_runner.hpp"
#include "runtime/error.hpp"

#include <cstdio>
#include <fmt/format.h>

namespace kiln {

namespace {

// Compiles, saying what the compile warns of (a corrupt cache entry rebuilt, an edited
// source): the commands here print no compile summary of their own.
void compile_and_warn(const std::string& dir, const CompileOptions& co) {
  for (const std::string& w : compile_dir(dir, co).warnings)
    fmt::print(stderr, "kiln: warning: {}\n", w);
}

} // namespace

BackendFactory compiled_backends(const std::string& dir, const std::string& device,
                                 const DeviceBackendOptions& o) {
  CompileOptions co;
  co.progress = o.progress;
  if (device == "emu") {
    co.compiler = "host";
    compile_and_warn(dir, co);
    return
        [lib = emu_library_path(dir), eo = o.emu] { return std::make_unique<EmuBackend>(lib, eo); };
  }
  if (device != "gpu")
    throw Error("", "--device", cat("\"", device, "\" runs no generated kernels (emu or gpu)"));
  co.compiler = "nvrtc";
  compile_and_warn(dir, co);
  return cuda_backends(dir, o.cuda);
}

BackendFactory cuda_backends(const std::string& dir, const CudaOptions& o) {
  return [dir, o]() -> std::unique_ptr<Backend> {
    auto cuda = std::make_unique<CudaBackend>(dir, o);
    cuda->set_library(make_cudnn_runner());
    return cuda;
  };
}

} // namespace kiln
