// ONNX TensorProto (initializers, Constant values, test data) to a kiln Tensor. Floats stay
// f32 (f16 and f64 keep their type); every integer type becomes i64, the type the constant
// shape arithmetic exporters emit works in. Sizes are checked against the data before any
// allocation, since the file is untrusted.
#pragma once

#include "runtime/tensor.hpp"

#include <onnx/onnx_pb.h> // needs ONNX_ML=1: Debian ships the -ml variant only

#include <string>

namespace kiln::onnx_import {

// The ONNX element type's name (FLOAT, INT64, ...).
std::string onnx_type_name(int32_t data_type);

// `model_dir`: where external data may live ("" refuses it). Throws kiln::Error naming
// the tensor.
Tensor tensor_from_proto(const onnx::TensorProto& t, const std::string& model_dir);

} // namespace kiln::onnx_import
