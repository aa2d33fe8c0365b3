#include "generator/model/onnx/layer_names.hpp"

namespace kiln::onnx_import {

std::string choose_layer_name(const onnx::NodeProto& n, const std::string& weight_name,
                              const std::set<std::string>& taken) {
  std::string candidates[3];
  // BatchNormalization's scale is its `weight` in PyTorch, so one rule fits all layers.
  const std::string suffix = ".weight";
  if (weight_name.size() > suffix.size() && weight_name.ends_with(suffix))
    candidates[0] = weight_name.substr(0, weight_name.size() - suffix.size());
  candidates[1] = n.name();
  candidates[2] =
      n.output_size() > 0 && !n.output(0).empty() ? n.op_type() + "_" + n.output(0) : n.op_type();
  for (const std::string& c : candidates)
    if (!c.empty() && !taken.count(c)) return c;
  for (int k = 2;; ++k) {
    const std::string c = candidates[2] + "_" + std::to_string(k);
    if (!taken.count(c)) return c;
  }
}

} // namespace kiln::onnx_import
