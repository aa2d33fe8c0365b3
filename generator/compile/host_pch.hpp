// A precompiled header of every kernel template for the host compiler, so the emulator's
// kernel libraries do not parse the device API and the template families once per kernel
// (~0.14 s of a 0.3-0.5 s compile).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace kiln {

// The name to pass as `-include NAME` when compiling a kernel with `cxx` (version `version`)
// and exactly `flags` (their -I being `include`, the tree write_template_tree wrote): a
// header including every template, next to its precompiled form built once per compiler and
// flags (atomically: concurrent kiln processes may build it at once). nullopt where the
// compiler could not build it: kernels then compile as before.
std::optional<std::string> host_pch(const std::string& cxx, const std::string& version,
                                    const std::vector<std::string>& flags,
                                    const std::string& include);

} // namespace kiln
