// Names of imported layers. A layer with parameters is named after its weight initializer
// when that is a PyTorch state_dict name (`layer1.0.conv1.weight` -> `layer1.0.conv1`), so
// kiln's weight names (`<layer>.weight`, DESIGN.md 4.1) are the exporter's; otherwise after
// the ONNX node, or its first output when the node is unnamed. Names are made unique.
#pragma once

#include <onnx/onnx_pb.h> // needs ONNX_ML=1: Debian ships the -ml variant only

#include <set>
#include <string>

namespace kiln::onnx_import {

std::string choose_layer_name(const onnx::NodeProto& n, const std::string& weight_name,
                              const std::set<std::string>& taken);

} // namespace kiln::onnx_import
