// Reading an ONNX file into a ModelProto (Debian's libonnx_proto generated classes) and
// checking what the importer relies on before it looks at any node: a graph, the default
// operator set within the versions this kiln knows.
#pragma once

#include <onnx/onnx_pb.h> // needs ONNX_ML=1: Debian ships the -ml variant only

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace kiln::onnx_import {

// The opset versions of the default domain the converters were written against: 9 to 21
// (what torch.onnx.export's dynamo exporter writes, 18 to 20; ONNX 1.16's 21). Converters
// read each operator as its version in the model's opset defines it (Resize's attributes of
// 18 and 19, Gelu from 20, ...); Debian 12's ONNX 1.12 parses every version (the protobuf
// format is unchanged) though its schemas stop at 17.
inline constexpr int64_t kMinOpset = 9;
inline constexpr int64_t kMaxOpset = 21;

// Throws kiln::Error(file, ...) when the bytes are not a well-formed ModelProto.
onnx::ModelProto parse_model_proto(std::span<const std::byte> bytes, const std::string& file);

// The default domain's opset version; throws when it is missing or out of range.
int64_t default_opset(const onnx::ModelProto& m);

} // namespace kiln::onnx_import
