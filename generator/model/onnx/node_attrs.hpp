// Typed access to an ONNX node's attributes. Every attribute of a node must be one the
// converter reads (an attribute kiln does not know could change the op's meaning), and each
// must have the type the operator's schema gives it; errors name the node and the attribute.
#pragma once

#include <onnx/onnx_pb.h> // needs ONNX_ML=1: Debian ships the -ml variant only

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::onnx_import {

// `node "conv1" (Conv)`: how messages name a node.
std::string node_label(const onnx::NodeProto& n);

class NodeAttrs {
public:
  // Throws kiln::Error naming the attribute when the node has one outside `known`.
  NodeAttrs(const onnx::NodeProto& n, std::initializer_list<std::string_view> known);

  bool has(std::string_view name) const { return find(name) != nullptr; }
  int64_t get_int(std::string_view name, int64_t fallback) const;
  float get_float(std::string_view name, float fallback) const;
  std::string get_string(std::string_view name, std::string fallback) const;
  std::optional<std::vector<int64_t>> get_ints(std::string_view name) const;
  std::optional<std::vector<float>> get_floats(std::string_view name) const;
  const onnx::TensorProto* get_tensor(std::string_view name) const;

private:
  const onnx::AttributeProto* find(std::string_view name) const;
  const onnx::AttributeProto& typed(std::string_view name,
                                    onnx::AttributeProto_AttributeType type) const;
  const onnx::NodeProto& node_;
};

} // namespace kiln::onnx_import
