// Channels-last regions of an ONNX graph: ConvNeXt (and others) write
// Transpose(0, 2, 3, 1) -> LayerNormalization(axis -1) -> MatMul -> GELU -> MatMul ->
// Transpose(0, 3, 1, 2). kiln's layers are logical NCHW and choose their memory layout
// themselves (generator/rewrite/layouts), so the region's ops import as kiln layers on the
// NCHW tensor, each converter reading the last ONNX axis as the channel axis: the Transposes
// cost nothing. A Value marked channels_last is readable only by the operators listed here;
// any other reader is an error naming the Transpose it cannot map.
#pragma once

#include "generator/model/onnx/converter.hpp"

namespace kiln::onnx_import {

// Before node n's converter: whether it reads a channels-last activation. Throws when n's
// operator cannot read one, or mixes channels-last and NCHW activations.
bool reads_channels_last(const Converter& c, const onnx::NodeProto& n);
// After it, for a node that read one: its activation outputs are channels-last too
// (Transpose sets its own).
void mark_channels_last(Converter& c, const onnx::NodeProto& n);
// A graph output that is channels-last is an error (the model would hand out NCHW).
void refuse_channels_last_output(const Value& v, const std::string& where);

// Transpose: (0, 2, 3, 1) of a 4-D NCHW activation begins a region, (0, 3, 1, 2) of a
// channels-last one ends it; constants are transposed at import.
void convert_transpose(Converter&, const onnx::NodeProto&);

} // namespace kiln::onnx_import
