// Channel moves on activations (ShuffleNet): the channel shuffle exporters write as Reshape
// to [N, g, C/g, H, W] -> Transpose(0, 2, 1, 3, 4) -> Reshape to [N, C, H, W], recognised as
// one channel_shuffle layer (Value::groups carries the 5-D view in between), and Split and
// Slice of the channel axis as channel_slice layers.
#pragma once

#include "generator/model/onnx/converter.hpp"

#include <vector>

namespace kiln::onnx_import {

// The shape ONNX sees of an activation value: kiln's, or the 5-D view of a shuffle in
// progress, or [N, H, W, C] when channels-last.
Shape onnx_shape(const Converter& c, const Value& v);
// Before node n's converter: a shuffle's 5-D view read by anything but Transpose and
// Reshape, or a 1-D view read by anything but Gather, is an error.
void refuse_grouped_reader(const Converter& c, const onnx::NodeProto& n);
// Reshape of an activation to `target` when it begins or ends a shuffle; false otherwise.
bool reshape_groups(Converter& c, const onnx::NodeProto& n, const Value& v, const Shape& target);
// Transpose(0, 2, 1, 3, 4) of a shuffle's 5-D view.
void transpose_groups(Converter& c, const onnx::NodeProto& n, const Value& v,
                      const std::vector<int64_t>& perm);
// Slice of an activation (starts, ends, axes, steps as the node gives them).
void slice_activation(Converter& c, const onnx::NodeProto& n, int x, std::vector<int64_t> starts,
                      std::vector<int64_t> ends, std::vector<int64_t> axes,
                      std::vector<int64_t> steps);
// Gather from a 1-D view (Value::flat) of an activation: the activation itself when the
// constant indices take every element in order, shaped as the activation.
void gather_flat(Converter& c, const onnx::NodeProto& n, const Value& v);
// Split (every opset's form) of an activation along the channel axis.
void convert_split(Converter&, const onnx::NodeProto&);

} // namespace kiln::onnx_import
