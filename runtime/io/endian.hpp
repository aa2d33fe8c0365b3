// Little-endian loads and stores. The tensor formats are little-endian and kiln copies element
// data as is, so it builds only for little-endian hosts.
#pragma once

#include <bit>
#include <cstddef>
#include <cstring>
#include <type_traits>
#include <vector>

namespace kiln::io {

static_assert(std::endian::native == std::endian::little,
              "kiln's tensor I/O needs a little-endian host");

template <class T> T load_le(const std::byte* p) {
  static_assert(std::is_integral_v<T>);
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

template <class T> void append_le(std::vector<std::byte>& out, T v) {
  static_assert(std::is_integral_v<T>);
  const auto* p = reinterpret_cast<const std::byte*>(&v);
  out.insert(out.end(), p, p + sizeof v);
}

} // namespace kiln::io
