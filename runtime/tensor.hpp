// An owning host tensor: what enters and leaves kiln (.npy, .safetensors, weights).
#pragma once

#include "runtime/dtype.hpp"
#include "runtime/shape.hpp"

#include <cstddef>
#include <span>
#include <vector>

namespace kiln {

template <class T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::f32; }
template <> constexpr DType dtype_of<double>() { return DType::f64; }
template <> constexpr DType dtype_of<int32_t>() { return DType::i32; }
template <> constexpr DType dtype_of<int64_t>() { return DType::i64; }
template <> constexpr DType dtype_of<uint8_t>() { return DType::u8; }

class Tensor {
public:
  Tensor() = default;
  Tensor(DType dtype, Shape shape);

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t numel() const { return kiln::numel(shape_); }
  size_t nbytes() const { return bytes_.size(); }
  std::byte* bytes() { return bytes_.data(); }
  const std::byte* bytes() const { return bytes_.data(); }

  // Typed access; throws if T is not the element type.
  template <class T> std::span<T> as() {
    check_type(dtype_of<T>());
    return {reinterpret_cast<T*>(bytes_.data()), size_t(numel())};
  }
  template <class T> std::span<const T> as() const {
    check_type(dtype_of<T>());
    return {reinterpret_cast<const T*>(bytes_.data()), size_t(numel())};
  }

  // Same data, another shape with the same element count (NCHW views such as fold).
  Tensor reshaped(Shape shape) const;
  // Converted element by element (float types round to nearest even).
  Tensor to(DType dtype) const;
  // Element i as a double, and set from a double (rounding to the element type).
  double get(int64_t i) const;
  void set(int64_t i, double v);

private:
  void check_type(DType want) const;
  DType dtype_ = DType::f32;
  Shape shape_;
  std::vector<std::byte> bytes_;
};

} // namespace kiln
