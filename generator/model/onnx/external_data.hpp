// Tensor bytes an ONNX file keeps outside itself (TensorProto.data_location = EXTERNAL,
// written by exporters for models over 2 GiB). The file is untrusted: its location must be
// a plain file name beside the model (no directories, no `..`, no absolute path, no link
// leading elsewhere) and the byte range must lie inside that file.
#pragma once

#include <onnx/onnx_pb.h> // needs ONNX_ML=1: Debian ships the -ml variant only

#include <cstddef>
#include <string>
#include <vector>

namespace kiln::onnx_import {

// `model_dir` is the directory holding the model ("" when the model came from memory:
// external data is then refused). `expected_bytes` is what the tensor's shape and type need.
// Throws kiln::Error naming the tensor.
std::vector<std::byte> read_external_data(const onnx::TensorProto& t, const std::string& model_dir,
                                          size_t expected_bytes);

} // namespace kiln::onnx_import
