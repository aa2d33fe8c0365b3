#include "generator/model/onnx/ops.hpp"

namespace kiln::onnx_import {

const std::map<std::string, OpConverter>& op_converters() {
  static const std::map<std::string, OpConverter> table = {
      {"Conv", convert_conv},
      {"ConvTranspose", convert_conv_transpose},
      {"MaxPool", convert_max_pool},
      {"AveragePool", convert_average_pool},
      {"GlobalAveragePool", convert_global_average_pool},
      {"BatchNormalization", convert_batch_norm},
      {"Gemm", convert_gemm},
      {"MatMul", convert_matmul},
      {"Add", convert_add},
      {"Relu", convert_relu},
      {"HardSwish", convert_hardswish},
      {"Clip", convert_clip},
      {"Softmax", convert_softmax},
      {"Identity", convert_identity},
      {"Dropout", convert_dropout},
      {"Flatten", convert_flatten},
      {"Reshape", convert_reshape},
      {"Squeeze", convert_squeeze},
      {"Unsqueeze", convert_unsqueeze},
      {"Concat", convert_concat},
      {"Resize", convert_resize},
      {"Upsample", convert_resize},
      {"Constant", convert_constant},
      {"Shape", convert_shape},
      {"Gather", convert_gather},
      {"Cast", convert_cast},
      {"Sub", convert_arith},
      {"Mul", convert_arith},
      {"Div", convert_arith},
      {"Slice", convert_slice},
  };
  return table;
}

std::string supported_op_list() {
  std::string s;
  for (const auto& [name, fn] : op_converters()) {
    if (name == "ConvTranspose") continue; // listed only to explain why it is refused
    s += (s.empty() ? "" : ", ") + name;
  }
  return s;
}

} // namespace kiln::onnx_import
