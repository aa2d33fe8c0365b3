// safetensors dtype names ("F32") for kiln's element types.
#pragma once

#include "runtime/dtype.hpp"

#include <array>
#include <optional>
#include <string_view>
#include <utility>

namespace kiln::io {

inline constexpr std::array<std::pair<std::string_view, DType>, 6> safetensors_dtypes{{
    {"F16", DType::f16},
    {"BF16", DType::bf16},
    {"F32", DType::f32},
    {"F64", DType::f64},
    {"I32", DType::i32},
    {"I64", DType::i64},
}};

inline std::optional<DType> safetensors_dtype(std::string_view name) {
  for (auto [n, t] : safetensors_dtypes)
    if (n == name) return t;
  return std::nullopt;
}

inline std::string_view safetensors_dtype_name(DType t) {
  for (auto [n, d] : safetensors_dtypes)
    if (d == t) return n;
  return "?";
}

} // namespace kiln::io
