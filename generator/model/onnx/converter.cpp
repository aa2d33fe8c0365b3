#include "generator/model/onnx/converter.hpp"

#include "generator/model/onnx/layer_names.hpp"
#include "generator/model/onnx/node_attrs.hpp"
#include "runtime/error.hpp"

#include <algorithm>
#include <cmath>

namespace kiln::onnx_import {

bool Converter::has_input(const onnx::NodeProto& n, int i) const {
  return i < n.input_size() && !n.input(i).empty();
}

const Value& Converter::input(const onnx::NodeProto& n, int i) const {
  const Value& v = raw_input(n, i);
  if (v.pending)
    throw Error("", node_label(n),
                cat("input ", i, " (\"", n.input(i), "\") comes from ", v.pending->from,
                    ": kiln imports Mul and Div of an activation by a constant, Erf, and Add of "
                    "a constant only inside GELU (x * 0.5 * (1 + erf(x / sqrt 2)))"));
  return v;
}

const Value& Converter::raw_input(const onnx::NodeProto& n, int i) const {
  if (!has_input(n, i)) throw Error("", node_label(n), cat("input ", i, " is missing"));
  auto it = values.find(n.input(i));
  if (it == values.end()) // graph_order guarantees producers; this is a converter bug guard
    throw Error("", node_label(n), cat("input \"", n.input(i), "\" has no value"));
  if (it->second.unavailable) throw Unavailable{};
  return it->second;
}

int Converter::activation(const onnx::NodeProto& n, int i, std::string_view role) const {
  const Value& v = input(n, i);
  if (v.is_const)
    throw Error("", node_label(n),
                cat("input ", i, " (", role, ", \"", n.input(i),
                    "\") is a constant; kiln's layer takes an activation there"));
  return v.ref;
}

const Tensor& Converter::constant(const onnx::NodeProto& n, int i, std::string_view role) const {
  const Value& v = input(n, i);
  if (!v.is_const)
    throw Error("", node_label(n),
                cat("input ", i, " (", role, ", \"", n.input(i),
                    "\") must be a constant (an initializer or computed from constants), but "
                    "it depends on the model input"));
  return v.constant;
}

int Converter::readers(int ref) const {
  int uses_total = 0, aliases = 0;
  for (const auto& [name, v] : values) {
    if (v.is_const || v.unavailable || v.pending || v.ref != ref) continue;
    ++aliases;
    uses_total += uses.count(name) ? uses.at(name) : 0;
  }
  return uses_total - std::max(0, aliases - 1);
}

bool Converter::channels_last(const onnx::NodeProto& n, int i) const {
  const Value& v = raw_input(n, i);
  return !v.is_const && v.channels_last;
}

bool Converter::all_inputs_const(const onnx::NodeProto& n) const {
  for (int i = 0; i < n.input_size(); ++i)
    if (has_input(n, i) && !raw_input(n, i).is_const) return false;
  return true;
}

void Converter::set_unavailable(const onnx::NodeProto& n) {
  Value v;
  v.unavailable = true;
  v.ref = -2; // no layer
  for (int i = 0; i < n.output_size(); ++i)
    set_output(n, i, v);
}

void Converter::set_output(const onnx::NodeProto& n, int i, Value v) {
  if (i < n.output_size() && !n.output(i).empty()) values[n.output(i)] = std::move(v);
}

void Converter::set_const_output(const onnx::NodeProto& n, Tensor t) {
  Value v;
  v.is_const = true;
  v.constant = std::move(t);
  set_output(n, 0, std::move(v));
  ++folded;
}

void Converter::require_unused_outputs(const onnx::NodeProto& n, int first) const {
  for (int i = first; i < n.output_size(); ++i) {
    const std::string& o = n.output(i);
    if (!o.empty() && uses.count(o) && uses.at(o) > 0)
      throw Error("", node_label(n),
                  cat("output ", i, " (\"", o,
                      "\") is used, but kiln computes only the first "
                      "output of ",
                      n.op_type()));
  }
}

int Converter::add_layer(const onnx::NodeProto& n, OpKind op, const Attrs& a,
                         std::vector<int> inputs, const std::string& weight_name) {
  Node node;
  node.name = choose_layer_name(n, weight_name, taken);
  taken.insert(node.name);
  node.op = op;
  node.attrs = a;
  node.inputs = std::move(inputs);
  std::vector<Shape> in;
  for (int r : node.inputs)
    in.push_back(model.shape_of(r));
  try {
    node.shape = infer_shape(op, a, in);
  } catch (const Error& e) {
    std::string what = e.where().empty() ? e.message() : e.where() + " " + e.message();
    throw Error("", node_label(n), cat("as kiln's ", op_name(op), ": ", what));
  }
  model.nodes.push_back(std::move(node));
  const int ref = int(model.nodes.size()) - 1;
  Value v;
  v.ref = ref;
  set_output(n, 0, v);
  return ref;
}

void Converter::add_param(int layer, const std::string& suffix, const Tensor& t) {
  weights[model.nodes[layer].name + "." + suffix] = as_f32(t);
}

std::vector<int64_t> const_ints(const onnx::NodeProto& n, const Tensor& t, std::string_view role) {
  std::vector<int64_t> r;
  if (t.dtype() == DType::i64) {
    auto v = t.as<int64_t>();
    return {v.begin(), v.end()};
  }
  for (int64_t i = 0; i < t.numel(); ++i) {
    const double v = t.get(i);
    if (!std::isfinite(v) || v != std::floor(v) || std::fabs(v) > 9.0e15)
      throw Error("", node_label(n), cat(role, " holds ", v, ", not an integer"));
    r.push_back(int64_t(v));
  }
  return r;
}

Tensor as_f32(const Tensor& t) {
  if (t.dtype() == DType::f32) return t;
  Tensor r(DType::f32, t.shape());
  for (int64_t i = 0; i < t.numel(); ++i)
    r.set(i, t.get(i));
  return r;
}

} // namespace kiln::onnx_import
