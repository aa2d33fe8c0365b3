// kiln compile: every kernel of a generated directory to an image for the descriptor's
// architecture — NVRTC in process (cubins), nvcc (the same cubins, plus one fatbin), or the
// host C++ compiler (one shared object for the emu backend) — through the kernel cache, in
// parallel. Resource usage (registers, spills, shared memory) goes into the manifest.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace kiln {

// Some kernel did not compile (exit code 1). The message holds every failure.
class CompileFailed : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

struct CompileOptions {
  std::string compiler = "nvrtc"; // nvrtc, nvcc or host
  int jobs = 0;                   // 0: hardware threads
  std::string cache_dir;          // "" default; see KernelCache
  bool use_cache = true;
  bool progress = false;          // a progress line on stderr
  std::string arch;               // override the manifest's architecture (sm_75, ...)
  // Each kernel's SASS census into the manifest where a disassembler is found (~0.4 s of
  // CPU a kernel, run in the compile pool): `kiln compile` asks for it; the commands that
  // compile on the way to running (run, bench, tune, check) do not.
  bool sass = false;
};

struct CompileSummary {
  int kernels = 0, compiled = 0, cached = 0;
  int spilling = 0; // kernels that promised no spills and spill
  std::vector<std::string> warnings;
  double seconds = 0;
  std::string output; // what was written (cubins, fatbin, .so)
};

CompileSummary compile_dir(const std::string& dir, const CompileOptions& o);

// The shared object the emu backend loads for a generated directory.
std::string emu_library_path(const std::string& dir);

} // namespace kiln
