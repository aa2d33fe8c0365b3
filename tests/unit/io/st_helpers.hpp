// Builds safetensors images from header text for the safetensors tests.
#pragma once

#include "tests/unit/io/helpers.hpp"

namespace kiln::test {

// The 8-byte little-endian length, the header text as given, then the data.
inline std::vector<std::byte> safetensors_image(const std::string& header,
                                                const std::string& data = "") {
  std::string s;
  for (int i = 0; i < 8; ++i)
    s += char((uint64_t(header.size()) >> (8 * i)) & 0xff);
  return bytes(s + header + data);
}

} // namespace kiln::test
