// LayerNorm as exporters wrote it before ONNX had LayerNormalization (opset 17; PyTorch's
// TorchScript exporter at any opset below it):
//   m = ReduceMean(x, [a]); d = Sub(x, m); v = ReduceMean(Pow(d, 2) or Mul(d, d), [a]);
//   y = Div(d, Sqrt(Add(v, eps))), then optionally Mul by a constant scale and Add a constant
//   bias (either operand order).
// Each chain whose inner values nothing else reads becomes one LayerNormalization node (the
// last node's name and output, the scale's and bias's names), before the import visits the
// graph; convert_layer_norm (ops_layout.cpp) then imports it as it imports the operator.
#pragma once

#include <onnx/onnx_pb.h> // needs ONNX_ML=1: Debian ships the -ml variant only

#include <string>

namespace kiln::onnx_import {

// The attribute the rewritten node carries: the one axis the chain reduced over. ONNX's
// LayerNormalization normalises every axis from `axis` on; the chain normalises this axis
// alone (the channels of an NCHW activation when it is 1).
inline constexpr const char* kReducedAxisAttr = "kiln_reduced_axis";

// Rewrites every such chain of g in place; returns how many. New constants (a scale of ones
// where the chain has none) are added as initializers named after the node.
int fuse_layer_norm_patterns(onnx::GraphProto& g, int opset);

} // namespace kiln::onnx_import
