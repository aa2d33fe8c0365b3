// The ONNX operators kiln imports, one converter per operator type. A converter reads its
// node through the Converter, adds kiln layers (or computes a constant) and sets the node's
// outputs; anything it cannot express exactly is a kiln::Error naming the node and the
// attribute or input at fault.
#pragma once

#include "generator/model/onnx/converter.hpp"

#include <map>
#include <string>
#include <vector>

namespace kiln::onnx_import {

using OpConverter = void (*)(Converter&, const onnx::NodeProto&);

// Operator type -> converter, for the default domain.
const std::map<std::string, OpConverter>& op_converters();
// "Add, AveragePool, ...": for the message about an unsupported operator.
std::string supported_op_list();

// ops_conv_pool.cpp
void convert_conv(Converter&, const onnx::NodeProto&);
void convert_conv_transpose(Converter&, const onnx::NodeProto&);
void convert_max_pool(Converter&, const onnx::NodeProto&);
void convert_average_pool(Converter&, const onnx::NodeProto&);
void convert_global_average_pool(Converter&, const onnx::NodeProto&);
// ops_reduce.cpp
void convert_reduce_sum(Converter&, const onnx::NodeProto&);
void convert_reduce_mean(Converter&, const onnx::NodeProto&);
void convert_reduce_max(Converter&, const onnx::NodeProto&);
// ops_dense.cpp
void convert_batch_norm(Converter&, const onnx::NodeProto&);
void convert_gemm(Converter&, const onnx::NodeProto&);
void convert_matmul(Converter&, const onnx::NodeProto&);
void convert_add(Converter&, const onnx::NodeProto&);
// ops_layout.cpp
void convert_layer_norm(Converter&, const onnx::NodeProto&);
// Mul (Div when `reciprocal`) of an activation by the per-channel constant at input k:
// folded into the weight and bias of the layer producing it (ConvNeXt's layer scale).
void scale_channels(Converter&, const onnx::NodeProto&, int k, bool reciprocal);
// Add (sign 1) or Sub (-1) of the scalar or per-channel constant at input k to an
// activation: folded into the bias of the layer producing it.
void shift_channels(Converter&, const onnx::NodeProto&, int k, double sign);
void convert_sub(Converter&, const onnx::NodeProto&);
// ops_activation.cpp
void convert_relu(Converter&, const onnx::NodeProto&);
void convert_hardswish(Converter&, const onnx::NodeProto&);
void convert_clip(Converter&, const onnx::NodeProto&);
void convert_hard_sigmoid(Converter&, const onnx::NodeProto&);
void convert_sigmoid(Converter&, const onnx::NodeProto&);
void convert_gelu(Converter&, const onnx::NodeProto&);
void convert_softmax(Converter&, const onnx::NodeProto&);
void convert_identity(Converter&, const onnx::NodeProto&);
void convert_dropout(Converter&, const onnx::NodeProto&);
// ops_shape.cpp
void convert_flatten(Converter&, const onnx::NodeProto&);
void convert_reshape(Converter&, const onnx::NodeProto&);
void convert_squeeze(Converter&, const onnx::NodeProto&);
void convert_unsqueeze(Converter&, const onnx::NodeProto&);
void convert_concat(Converter&, const onnx::NodeProto&);
// ops_spatial.cpp
void convert_resize(Converter&, const onnx::NodeProto&); // Resize and Upsample
void convert_pad(Converter&, const onnx::NodeProto&);
void convert_space_to_depth(Converter&, const onnx::NodeProto&);
// pattern.cpp: on activations, the pieces of SiLU, HardSwish and GELU (on constants: arith)
void convert_mul(Converter&, const onnx::NodeProto&);
void convert_div(Converter&, const onnx::NodeProto&);
void convert_erf(Converter&, const onnx::NodeProto&);
// Add of a pending expression (1 + erf(k x)); false when neither input is pending.
bool add_pending(Converter&, const onnx::NodeProto&);
// const_ops.cpp: operators kiln computes at import time, on constants only
void convert_constant(Converter&, const onnx::NodeProto&);
void convert_shape(Converter&, const onnx::NodeProto&);
void convert_gather(Converter&, const onnx::NodeProto&);
void convert_cast(Converter&, const onnx::NodeProto&);
void convert_arith(Converter&, const onnx::NodeProto&); // Sub, Mul, Div (and Add on constants)
void convert_slice(Converter&, const onnx::NodeProto&);
// Constants joined along `axis` (Concat of shape pieces).
Tensor concat_constants(const onnx::NodeProto& n, const std::vector<const Tensor*>& parts,
                        int64_t axis);

} // namespace kiln::onnx_import
