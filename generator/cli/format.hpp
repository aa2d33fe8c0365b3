// Human-readable numbers for tables and summaries.
#pragma once

#include <cstdint>
#include <string>

namespace kiln::cli {

std::string human_bytes(int64_t bytes); // "1.5 MiB"
std::string human_count(int64_t n);     // "11.69 M", "4.09 G"
std::string with_commas(int64_t n);     // "11,689,512"

} // namespace kiln::cli
