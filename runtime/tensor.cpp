#include "runtime/tensor.hpp"

#include "runtime/error.hpp"
#include "runtime/half.hpp"

#include <cstring>

namespace kiln {

Tensor::Tensor(DType dtype, Shape shape)
    : dtype_(dtype), shape_(std::move(shape)),
      bytes_(size_t(kiln::numel(shape_)) * dtype_size(dtype)) {}

void Tensor::check_type(DType want) const {
  if (want != dtype_)
    throw Error(cat("tensor of ", dtype_name(dtype_), " accessed as ", dtype_name(want)));
}

Tensor Tensor::reshaped(Shape shape) const {
  if (kiln::numel(shape) != numel())
    throw Error(cat("cannot view ", shape_str(shape_), " as ", shape_str(shape)));
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

double Tensor::get(int64_t i) const {
  const std::byte* p = bytes_.data() + size_t(i) * dtype_size(dtype_);
  switch (dtype_) {
  case DType::f16: { uint16_t h; std::memcpy(&h, p, 2); return half_bits_to_float(h); }
  case DType::bf16: { uint16_t h; std::memcpy(&h, p, 2); return bf16_bits_to_float(h); }
  case DType::f32: { float v; std::memcpy(&v, p, 4); return v; }
  case DType::f64: { double v; std::memcpy(&v, p, 8); return v; }
  case DType::i32: { int32_t v; std::memcpy(&v, p, 4); return double(v); }
  case DType::i64: { int64_t v; std::memcpy(&v, p, 8); return double(v); }
  case DType::u8: return double(uint8_t(*p));
  }
  return 0;
}

void Tensor::set(int64_t i, double v) {
  std::byte* p = bytes_.data() + size_t(i) * dtype_size(dtype_);
  switch (dtype_) {
  case DType::f16: { uint16_t h = float_to_half_bits(float(v)); std::memcpy(p, &h, 2); break; }
  case DType::bf16: { uint16_t h = float_to_bf16_bits(float(v)); std::memcpy(p, &h, 2); break; }
  case DType::f32: { float f = float(v); std::memcpy(p, &f, 4); break; }
  case DType::f64: std::memcpy(p, &v, 8); break;
  case DType::i32: { int32_t x = int32_t(v); std::memcpy(p, &x, 4); break; }
  case DType::i64: { int64_t x = int64_t(v); std::memcpy(p, &x, 8); break; }
  case DType::u8: *p = std::byte(uint8_t(v)); break;
  }
}

Tensor Tensor::to(DType dtype) const {
  if (dtype == dtype_) return *this;
  Tensor t(dtype, shape_);
  const int64_t n = numel();
  for (int64_t i = 0; i < n; ++i) t.set(i, get(i));
  return t;
}

} // namespace kiln
