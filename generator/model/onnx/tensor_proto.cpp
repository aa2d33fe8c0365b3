#include "generator/model/onnx/tensor_proto.hpp"

#include "generator/model/onnx/external_data.hpp"
#include "runtime/error.hpp"
#include "runtime/io/limits.hpp"

#include <cstring>

namespace kiln::onnx_import {

namespace {

using TP = onnx::TensorProto;

// The element kiln stores and the bytes one element takes in raw_data.
struct Layout {
  DType dtype;
  size_t raw_size;
};

std::optional<Layout> layout_of(int32_t t) {
  switch (t) {
  case TP::FLOAT: return Layout{DType::f32, 4};
  case TP::DOUBLE: return Layout{DType::f64, 8};
  case TP::FLOAT16: return Layout{DType::f16, 2};
  case TP::INT64: return Layout{DType::i64, 8};
  case TP::INT32: return Layout{DType::i64, 4};
  case TP::INT16: return Layout{DType::i64, 2};
  case TP::INT8: return Layout{DType::i64, 1};
  case TP::UINT8: return Layout{DType::i64, 1};
  case TP::BOOL: return Layout{DType::i64, 1};
  default: return std::nullopt;
  }
}

// Little-endian raw bytes to elements of the kiln type.
void from_raw(Tensor& out, int32_t t, const std::byte* p) {
  const int64_t n = out.numel();
  switch (t) {
  case TP::FLOAT:
  case TP::DOUBLE:
  case TP::FLOAT16:
  case TP::INT64: std::memcpy(out.bytes(), p, out.nbytes()); return;
  default: break;
  }
  auto dst = out.as<int64_t>();
  for (int64_t i = 0; i < n; ++i) {
    switch (t) {
    case TP::INT32: {
      int32_t v;
      std::memcpy(&v, p + 4 * i, 4);
      dst[i] = v;
      break;
    }
    case TP::INT16: {
      int16_t v;
      std::memcpy(&v, p + 2 * i, 2);
      dst[i] = v;
      break;
    }
    case TP::INT8: dst[i] = int8_t(p[i]); break;
    default: dst[i] = uint8_t(p[i]); break; // UINT8, BOOL
    }
  }
}

} // namespace

std::string onnx_type_name(int32_t data_type) {
  if (TP::DataType_IsValid(data_type)) return TP::DataType_Name(TP::DataType(data_type));
  return cat("type ", data_type);
}

Tensor tensor_from_proto(const onnx::TensorProto& t, const std::string& model_dir) {
  const std::string where = cat("tensor \"", t.name(), "\"");
  const auto layout = layout_of(t.data_type());
  if (!layout)
    throw Error("", where,
                cat("element type ", onnx_type_name(t.data_type()),
                    " is not supported (FLOAT, FLOAT16, DOUBLE or an integer type)"));
  if (t.has_segment()) throw Error("", where, "segmented tensors are not supported");
  Shape shape(t.dims().begin(), t.dims().end());
  const auto count = io::bounded_numel(shape);
  if (!count)
    throw Error("", where, cat("shape ", shape_str(shape), " is invalid or absurdly large"));
  const size_t raw_bytes = size_t(*count) * layout->raw_size;
  // The data's size is checked against the shape before anything is allocated: a lying
  // shape must not make kiln allocate what the file does not hold.
  if (t.data_location() == TP::EXTERNAL) {
    const std::vector<std::byte> bytes = read_external_data(t, model_dir, raw_bytes);
    Tensor out(layout->dtype, shape);
    from_raw(out, t.data_type(), bytes.data());
    return out;
  }
  if (t.has_raw_data()) {
    if (t.raw_data().size() != raw_bytes)
      throw Error("", where,
                  cat("raw_data holds ", t.raw_data().size(), " bytes, its shape ",
                      shape_str(shape), " and type need ", raw_bytes));
    Tensor out(layout->dtype, shape);
    from_raw(out, t.data_type(), reinterpret_cast<const std::byte*>(t.raw_data().data()));
    return out;
  }
  int64_t held;
  switch (t.data_type()) {
  case TP::FLOAT: held = t.float_data_size(); break;
  case TP::DOUBLE: held = t.double_data_size(); break;
  case TP::INT64: held = t.int64_data_size(); break;
  default: held = t.int32_data_size(); break; // FLOAT16 bit patterns, narrow integers, bool
  }
  if (held != *count)
    throw Error("", where,
                cat("holds ", held, " values, its shape ", shape_str(shape), " needs ", *count));
  Tensor out(layout->dtype, shape);
  if (*count == 0) return out; // an empty tensor: no bytes to copy (memcpy from null is UB)
  switch (t.data_type()) {
  case TP::FLOAT: std::memcpy(out.bytes(), t.float_data().data(), out.nbytes()); break;
  case TP::DOUBLE: std::memcpy(out.bytes(), t.double_data().data(), out.nbytes()); break;
  case TP::INT64: std::memcpy(out.bytes(), t.int64_data().data(), out.nbytes()); break;
  case TP::FLOAT16: {
    auto* dst = reinterpret_cast<uint16_t*>(out.bytes());
    for (int64_t i = 0; i < *count; ++i)
      dst[i] = uint16_t(t.int32_data(int(i)));
    break;
  }
  default: {
    auto dst = out.as<int64_t>();
    for (int64_t i = 0; i < *count; ++i)
      dst[i] = t.int32_data(int(i));
    break;
  }
  }
  return out;
}

} // namespace kiln::onnx_import
