#include "generator/model/onnx/ops.hpp"

#include "generator/model/onnx/channels_last.hpp"
#include "generator/model/onnx/ops_channels.hpp"

namespace kiln::onnx_import {

const std::map<std::string, OpConverter>& op_converters() {
  static const std::map<std::string, OpConverter> table = {
      {"Conv", convert_conv},
      {"ConvTranspose", convert_conv_transpose},
      {"MaxPool", convert_max_pool},
      {"AveragePool", convert_average_pool},
      {"GlobalAveragePool", convert_global_average_pool},
      {"ReduceMean", convert_reduce_mean},
      {"ReduceMax", convert_reduce_max},
      {"ReduceSum", convert_reduce_sum},
      {"BatchNormalization", convert_batch_norm},
      {"LayerNormalization", convert_layer_norm},
      {"Transpose", convert_transpose},
      {"Gemm", convert_gemm},
      {"MatMul", convert_matmul},
      {"Add", convert_add},
      {"Relu", convert_relu},
      {"HardSwish", convert_hardswish},
      {"Clip", convert_clip},
      {"HardSigmoid", convert_hard_sigmoid},
      {"Sigmoid", convert_sigmoid},
      {"Gelu", convert_gelu},
      {"Softmax", convert_softmax},
      {"Identity", convert_identity},
      {"Dropout", convert_dropout},
      {"Flatten", convert_flatten},
      {"Reshape", convert_reshape},
      {"Squeeze", convert_squeeze},
      {"Unsqueeze", convert_unsqueeze},
      {"Concat", convert_concat},
      {"Resize", convert_resize},
      {"Pad", convert_pad},
      {"SpaceToDepth", convert_space_to_depth},
      {"Upsample", convert_resize},
      {"Constant", convert_constant},
      {"Shape", convert_shape},
      {"Gather", convert_gather},
      {"Cast", convert_cast},
      {"Sub", convert_sub},
      {"Mul", convert_mul},
      {"Div", convert_div},
      {"Erf", convert_erf},
      {"Slice", convert_slice},
      {"Split", convert_split},
  };
  return table;
}

namespace {

// Operators imported only on constants (the shape arithmetic exporters write before a
// Reshape), or only in one form on activations: the list says so rather than promise more.
const std::map<std::string, std::string>& limited_ops() {
  static const std::map<std::string, std::string> m = {
      {"Constant", ""},
      {"Gather", ""},
      {"Sub", " (on activations: minus a scalar or per-channel constant, folded into the bias "
              "of the layer before it, else a 1x1 depthwise conv of its own)"},
      {"Slice", " (on activations: along the channel axis, step 1)"},
      {"Cast", " (on activations: to FLOAT only)"},
      {"Mul",
       " (of two activations: one shape, or [N, C, H, W] by its [N, C, 1, 1]; x * "
       "Sigmoid(x) is SiLU, x * HardSigmoid(x) HardSwish; by a scalar constant: in GELU; by a "
       "per-channel one: folded into the layer before it, else a 1x1 depthwise conv of its "
       "own)"},
      {"Div", " (on activations: in GELU's x * 0.5 * (1 + Erf(x / sqrt 2)); by a per-channel "
              "constant: folded into the layer before it, else a 1x1 depthwise conv of its "
              "own)"},
      {"Erf", " (on activations: in GELU)"},
      {"LayerNormalization", " (also written out as exporters before opset 17 did: ReduceMean, "
                             "Sub, Pow or Mul, ReduceMean, Add, Sqrt, Div, then Mul and Add by "
                             "constants; over the channels of NCHW too)"},
      {"Transpose", " (on activations: (0, 2, 3, 1) to channels-last and (0, 3, 1, 2) back, "
                    "around LayerNormalization, MatMul, Add, reductions and elementwise ops; "
                    "(0, 2, 1, 3, 4) in a channel shuffle)"},
      {"Reshape", " (on activations: to [N, features]; to [N, g, C/g, H, W] and back in a "
                  "channel shuffle)"},
  };
  return m;
}

} // namespace

std::string supported_op_list() {
  std::string layers, constant;
  const auto& limited = limited_ops();
  for (const auto& [name, fn] : op_converters()) {
    auto it = limited.find(name);
    std::string& list = it == limited.end() ? layers : constant;
    list += (list.empty() ? "" : ", ") + name + (it == limited.end() ? "" : it->second);
  }
  return layers + "; on constants only (computed at import), except as noted: " + constant;
}

} // namespace kiln::onnx_import
