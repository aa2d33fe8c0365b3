// The source lines a compiler log points at, so a failed compile shows its cause in place.
#pragma once

#include <string>
#include <string_view>

namespace kiln {

// For each "file(line): error" (NVRTC, nvcc) or "file:line:col: error" (gcc, clang) in
// `log`, the line with its neighbours, from `source` when the file is the kernel itself or
// from the embedded templates when it names one.
std::string source_excerpt(std::string_view log, const std::string& kernel_path,
                           std::string_view source);

} // namespace kiln
