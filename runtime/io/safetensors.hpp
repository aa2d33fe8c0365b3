// The safetensors format: an 8-byte little-endian header length, a JSON header naming each
// tensor's dtype, shape and [begin, end) byte range in the data section that follows, and an
// optional "__metadata__" map of strings.
#pragma once

#include "runtime/tensor.hpp"

#include <cstddef>
#include <map>
#include <span>
#include <string>
#include <vector>

namespace kiln::io {

// Ordered maps keep serialization deterministic.
struct Safetensors {
  std::map<std::string, Tensor> tensors;
  std::map<std::string, std::string> metadata;
};

// Validates the header as the reference implementation does (and a little more): tensor
// ranges must exactly tile the data section. Throws kiln::Error(name, <tensor or "header">, ...).
Safetensors parse_safetensors(std::span<const std::byte> data, const std::string& name);
Safetensors read_safetensors(const std::string& path);

// Tensors in name order with contiguous offsets, compact JSON header padded with spaces to a
// multiple of 8. Throws kiln::Error for a tensor named "__metadata__" or names and metadata
// that are not valid UTF-8.
std::vector<std::byte> serialize_safetensors(const Safetensors& st);
void write_safetensors(const std::string& path, const Safetensors& st); // atomic

} // namespace kiln::io
