// Element types of tensors and buffers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace kiln {

// u8: the one-byte local indices and counts of compacted sparse activations.
enum class DType : uint8_t { f16, bf16, f32, f64, i32, i64, u8 };

constexpr size_t dtype_size(DType t) {
  switch (t) {
  case DType::u8: return 1;
  case DType::f16:
  case DType::bf16: return 2;
  case DType::f32:
  case DType::i32: return 4;
  case DType::f64:
  case DType::i64: return 8;
  }
  return 0;
}

constexpr std::string_view dtype_name(DType t) {
  switch (t) {
  case DType::f16: return "f16";
  case DType::bf16: return "bf16";
  case DType::f32: return "f32";
  case DType::f64: return "f64";
  case DType::i32: return "i32";
  case DType::i64: return "i64";
  case DType::u8: return "u8";
  }
  return "?";
}

constexpr bool is_float(DType t) { return t != DType::i32 && t != DType::i64 && t != DType::u8; }

inline std::optional<DType> parse_dtype(std::string_view s) {
  for (DType t : {DType::f16, DType::bf16, DType::f32, DType::f64, DType::i32, DType::i64, DType::u8})
    if (dtype_name(t) == s) return t;
  return std::nullopt;
}

} // namespace kiln
