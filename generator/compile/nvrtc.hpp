// NVRTC, in process: kernel source to a cubin for one architecture, with kiln's templates
// supplied as in-memory headers (no install path needed) and the ptxas report parsed.
#pragma once

#include "generator/compile/resources.hpp"

#include <string>
#include <vector>

namespace kiln {

struct CompileOutput {
  bool ok = false;
  std::string log;               // compiler log (errors, ptxas report)
  std::vector<char> image;       // cubin
  Resources resources;
};

// `arch` is "sm_90" etc. Thread-safe (NVRTC programs are independent).
CompileOutput nvrtc_compile(const std::string& source, const std::string& file_name,
                            const std::string& entry, const std::string& arch);

// The NVRTC version, e.g. "13.0", for cache keys.
std::string nvrtc_version();

} // namespace kiln
