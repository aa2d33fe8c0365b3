// 1-D signals: a graph input [N, C, L] (audio, sensor series, ONNX's own rank-3 node tests)
// imports as kiln's [N, C, L, 1], so that every 2-D op runs it: a Conv1d is a conv2d with a
// [k, 1] kernel, a MaxPool1d a [k, 1] window, a reduction over L one over H and W (W is 1).
// The model is marked a signal model (Model::signal): `kiln run` takes its [N, C, L] input
// and writes its 4-D outputs as [N, C, L], the shapes onnxruntime gives. A Value marked
// signal is readable only by the operators listed here; any other reader is an error that
// names them.
#pragma once

#include "generator/model/onnx/converter.hpp"
#include "runtime/error.hpp"

namespace kiln::onnx_import {

// Before node n's converter: whether it reads a signal activation. Throws when n's operator
// cannot read one, or mixes a signal with an activation of another rank.
bool reads_signal(const Converter& c, const onnx::NodeProto& n);
// Node n (which reads a signal) in its 2-D form: window attributes with a unit W axis
// (kernel_shape [k] -> [k, 1], pads [b, e] -> [b, 0, e, 0]), a Conv weight [O, C, k] ->
// [O, C, k, 1], the constant operands of Add/Sub/Mul/Div given a trailing unit axis (ONNX
// broadcasts from the last axis), negative Flatten/Concat axes counted from rank 3 (Squeeze
// and Reshape read the ONNX shape themselves).
onnx::NodeProto signal_node(Converter& c, const onnx::NodeProto& n);
// An error of the converter of a node in its 2-D form, saying that the shapes it names are
// kiln's ([N, C, L, 1] is ONNX's [N, C, L]; a constant [L] is [L, 1]).
Error signal_error(const Error& e);
// After it: its 4-D activation outputs are signals too.
void mark_signal(Converter& c, const onnx::NodeProto& n);

} // namespace kiln::onnx_import
