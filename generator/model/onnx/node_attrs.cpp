#include "generator/model/onnx/node_attrs.hpp"

#include "runtime/error.hpp"

#include <algorithm>
#include <vector>

namespace kiln::onnx_import {

std::string node_label(const onnx::NodeProto& n) {
  std::string name = n.name();
  if (name.empty() && n.output_size() > 0) name = n.output(0);
  return cat("node \"", name, "\" (", n.op_type(), ")");
}

NodeAttrs::NodeAttrs(const onnx::NodeProto& n, std::initializer_list<std::string_view> known)
    : node_(n) {
  // Every unknown attribute in one message.
  std::vector<std::string> unknown;
  for (const onnx::AttributeProto& a : n.attribute())
    if (std::find(known.begin(), known.end(), a.name()) == known.end())
      unknown.push_back("\"" + a.name() + "\"");
  if (unknown.empty()) return;
  std::string list, names;
  for (std::string_view k : known)
    list += (list.empty() ? "" : ", ") + std::string(k);
  for (const std::string& u : unknown)
    names += (names.empty() ? "" : ", ") + u;
  throw Error("", node_label(n),
              cat(unknown.size() > 1 ? "attributes " : "attribute ", names,
                  unknown.size() > 1 ? " are" : " is", " not supported (", n.op_type(),
                  " attributes kiln reads: ", list.empty() ? "none" : list, ")"));
}

const onnx::AttributeProto* NodeAttrs::find(std::string_view name) const {
  for (const onnx::AttributeProto& a : node_.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

const onnx::AttributeProto& NodeAttrs::typed(std::string_view name,
                                             onnx::AttributeProto_AttributeType type) const {
  const onnx::AttributeProto* a = find(name);
  // Old exporters leave `type` unset (0); then the field that is set decides.
  if (a->type() != type && a->type() != onnx::AttributeProto::UNDEFINED)
    throw Error("", node_label(node_),
                cat("attribute \"", name, "\" has type ",
                    onnx::AttributeProto_AttributeType_Name(a->type()), ", expected ",
                    onnx::AttributeProto_AttributeType_Name(type)));
  return *a;
}

int64_t NodeAttrs::get_int(std::string_view name, int64_t fallback) const {
  return has(name) ? typed(name, onnx::AttributeProto::INT).i() : fallback;
}

float NodeAttrs::get_float(std::string_view name, float fallback) const {
  return has(name) ? typed(name, onnx::AttributeProto::FLOAT).f() : fallback;
}

std::string NodeAttrs::get_string(std::string_view name, std::string fallback) const {
  return has(name) ? typed(name, onnx::AttributeProto::STRING).s() : fallback;
}

std::optional<std::vector<int64_t>> NodeAttrs::get_ints(std::string_view name) const {
  if (!has(name)) return std::nullopt;
  const auto& a = typed(name, onnx::AttributeProto::INTS);
  return std::vector<int64_t>(a.ints().begin(), a.ints().end());
}

std::optional<std::vector<float>> NodeAttrs::get_floats(std::string_view name) const {
  if (!has(name)) return std::nullopt;
  const auto& a = typed(name, onnx::AttributeProto::FLOATS);
  return std::vector<float>(a.floats().begin(), a.floats().end());
}

const onnx::TensorProto* NodeAttrs::get_tensor(std::string_view name) const {
  return has(name) ? &typed(name, onnx::AttributeProto::TENSOR).t() : nullptr;
}

} // namespace kiln::onnx_import
