// Files compiled into a binary (tools/embed.py): shipped descriptors, models, templates,
// or a per-model binary's plan and kernel images.
#pragma once

#include <cstddef>
#include <span>
#include <string_view>

namespace kiln {

struct EmbeddedFile {
  std::string_view path; // relative to the folder it was embedded from
  std::string_view data;
};

} // namespace kiln
