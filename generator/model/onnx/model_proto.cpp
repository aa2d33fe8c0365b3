#include "generator/model/onnx/model_proto.hpp"

#include "runtime/error.hpp"

#include <climits>

namespace kiln::onnx_import {

onnx::ModelProto parse_model_proto(std::span<const std::byte> bytes, const std::string& file) {
  if (bytes.size() > size_t(INT_MAX))
    throw Error(file, "", "larger than 2 GiB: protobuf cannot hold it (use external data)");
  onnx::ModelProto m;
  // ParseFromArray rejects truncated fields, bad wire types and nesting deeper than
  // protobuf's recursion limit; a file cut at a field boundary parses, and the checks
  // below and in the converter catch what is then missing.
  if (!m.ParseFromArray(bytes.data(), int(bytes.size())))
    throw Error(file, "", "not a valid ONNX model: the protobuf is malformed or truncated");
  if (!m.has_graph() || m.graph().node_size() == 0)
    throw Error(file, "graph", "the model has no graph (or a graph without nodes)");
  return m;
}

int64_t default_opset(const onnx::ModelProto& m) {
  int64_t version = -1;
  for (const auto& o : m.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") version = o.version();
  if (version < 0)
    throw Error("", "opset_import",
                "the model imports no version of the default ONNX operator set");
  if (version < kMinOpset || version > kMaxOpset)
    throw Error("", "opset_import",
                cat("opset ", version, " is not supported (kiln imports opsets ", kMinOpset, " to ",
                    kMaxOpset, "; convert the model with onnx.version_converter)"));
  return version;
}

} // namespace kiln::onnx_import
