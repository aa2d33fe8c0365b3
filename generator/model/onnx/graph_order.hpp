// The order the importer visits an ONNX graph's nodes in. ONNX requires nodes in
// topological order, but the file is untrusted: this sorts them (keeping file order where
// it can), and reports a cycle by its nodes, a value produced twice, and an input nothing
// produces (a missing initializer).
#pragma once

#include <onnx/onnx_pb.h> // needs ONNX_ML=1: Debian ships the -ml variant only

#include <set>
#include <string>
#include <vector>

namespace kiln::onnx_import {

// `available`: names that exist before any node runs (graph inputs and initializers).
std::vector<int> node_order(const onnx::GraphProto& g, const std::set<std::string>& available);

} // namespace kiln::onnx_import
