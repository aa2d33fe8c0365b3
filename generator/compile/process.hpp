// Running a tool (nvcc, the host compiler) and capturing what it prints.
#pragma once

#include <string>
#include <vector>

namespace kiln {

struct ProcessResult {
  int exit_code = -1; // -1: could not start
  std::string output; // stdout and stderr, interleaved
};

ProcessResult run_process(const std::vector<std::string>& argv);

// What `tool --version` prints (for cache keys), or "" when the tool does not run.
std::string tool_version(const std::string& tool);

} // namespace kiln
