// ONNX import: an .onnx file (read with Debian's libonnx_proto) to a kiln model and its
// weights. Operators map to kiln layers (ops.hpp); initializers become the weights, named
// `<layer>.<param>` with PyTorch's state_dict names where the exporter kept them; shape
// arithmetic on constants is computed away. Everything in the file is untrusted: any
// problem is a kiln::Error naming the file and the node, tensor or field.
#pragma once

#include "generator/model/model.hpp"
#include "runtime/tensor.hpp"

#include <cstddef>
#include <map>
#include <span>
#include <string>

namespace kiln {

struct ImportedModel {
  Model model;
  std::map<std::string, Tensor> weights; // f32, by kiln parameter name
  int64_t opset = 0;
  int onnx_nodes = 0; // nodes in the ONNX graph
  int folded = 0;     // computed at import time (constants, shape arithmetic)
  int dropped = 0;    // Identity, Dropout, no-op reshapes
  int layer_norms_written_out = 0; // LayerNorm chains of several nodes imported as one layer
};

// True for a path kiln reads as ONNX (by its extension, .onnx).
bool is_onnx_path(const std::string& path);

// What kiln imports: the operators it converts to layers, then those it computes only on
// constants (the shape arithmetic exporters write), for messages and --help.
std::string onnx_supported_ops();

// `batch`: the input's batch when its first dimension is symbolic (0: 1); a positive batch
// also replaces a fixed one.
ImportedModel import_onnx(const std::string& path, int64_t batch = 0);
// From bytes in memory; `model_dir` is where external data may be read ("": nowhere).
ImportedModel import_onnx_bytes(std::span<const std::byte> bytes, const std::string& file,
                                const std::string& model_dir, int64_t batch = 0);

} // namespace kiln
