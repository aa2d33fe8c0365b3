// NumPy .npy files (format versions 1.0, 2.0 and 3.0), little-endian f16, f32, f64, i32, i64.
#pragma once

#include "runtime/tensor.hpp"

#include <cstddef>
#include <span>
#include <string>
#include <vector>

namespace kiln::io {

// The tensor in a .npy image; `name` (the file) attributes errors. Throws kiln::Error for
// anything but a well-formed C-order little-endian file of a supported dtype whose data is
// exactly as long as its shape says.
Tensor parse_npy(std::span<const std::byte> data, const std::string& name);
Tensor read_npy(const std::string& path);

// Byte-identical to numpy.save: version 1.0 (2.0 when the header needs it), data aligned to
// 64 bytes. bf16 has no NumPy dtype and throws kiln::Error.
std::vector<std::byte> serialize_npy(const Tensor& t);
void write_npy(const std::string& path, const Tensor& t); // atomic

} // namespace kiln::io
