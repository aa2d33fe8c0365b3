// kiln's kernel templates, compiled into the binary (tools/embed.py), as NVRTC headers and
// as files written out for nvcc and the host compiler.
#pragma once

#include <string>
#include <vector>

namespace kiln {

struct TemplateHeaders {
  std::vector<const char*> names;    // "common/kiln.cuh", ... (relative to templates/)
  std::vector<const char*> contents; // NUL-terminated
};
const TemplateHeaders& template_headers();

// Writes every template (and the runtime headers the emulator includes) under `dir`, so
// `-I dir` finds them; returns dir. Rewrites only files whose content differs.
std::string write_template_tree(const std::string& dir);

// A hash of all template contents, part of every cache key.
std::string templates_hash();

} // namespace kiln
