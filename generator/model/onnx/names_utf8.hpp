// ONNX names (graph, values, nodes) become layer names in kiln-model/1 JSON and tensor
// names in safetensors, both UTF-8; onnx.proto is proto2, so protobuf does not check them.
#pragma once

#include <onnx/onnx_pb.h> // needs ONNX_ML=1: Debian ships the -ml variant only

#include <string_view>

namespace kiln::onnx_import {

// Strict UTF-8 (no overlong forms, surrogates or code points past U+10FFFF).
bool is_utf8(std::string_view s);

// Throws kiln::Error naming the first name in the graph that is not UTF-8.
void check_graph_names(const onnx::GraphProto& g);

} // namespace kiln::onnx_import
