#include "generator/model/onnx/signal.hpp"

#include "generator/model/onnx/node_attrs.hpp"
#include "runtime/error.hpp"

#include <set>

namespace kiln::onnx_import {

namespace {

// Operators whose 2-D form computes the 1-D one exactly on [N, C, L, 1]: elementwise ones,
// per-channel ones, the windowed ones (a unit W axis added to their attributes), the
// reductions (their converter maps axis 2 to H and W), Flatten and Concat (the same axes),
// Squeeze and Reshape (they read the ONNX shape [N, C, L]: to [N, features] a flatten).
const std::set<std::string>& signal_ops() {
  static const std::set<std::string> s = {
      "Conv",      "MaxPool", "AveragePool", "GlobalAveragePool", "BatchNormalization",
      "Relu",      "Clip",    "Sigmoid",     "HardSigmoid",       "HardSwish",
      "Erf",       "Gelu",    "Identity",    "Dropout",           "Add",
      "Sub",       "Mul",     "Div",         "ReduceMean",        "ReduceSum",
      "ReduceMax", "Flatten", "Concat",      "Squeeze",           "Reshape"};
  return s;
}

const std::set<std::string>& window_ops() {
  static const std::set<std::string> s = {"Conv", "MaxPool", "AveragePool"};
  return s;
}

std::string signal_list() {
  std::string r;
  for (const auto& op : signal_ops())
    r += (r.empty() ? "" : ", ") + op;
  return r;
}

// The constant at input i of `n2` under a name holding `shape`'s view of it: in place when
// `n2` is its only reader (a Conv's weight keeps the name that names its layer), else a copy.
void reshape_constant(Converter& c, onnx::NodeProto& n2, int i, const Shape& shape) {
  const std::string name = n2.input(i);
  Value& v = c.values.at(name);
  const auto u = c.uses.find(name);
  if (u != c.uses.end() && u->second == 1) {
    v.constant = v.constant.reshaped(shape);
    return;
  }
  const std::string copy = name + ":1d_as_2d";
  if (!c.values.count(copy)) {
    Value w = v;
    w.constant = v.constant.reshaped(shape);
    c.values.emplace(copy, std::move(w));
  }
  ++c.uses[copy];
  n2.set_input(i, copy);
}

// Window attribute `a` of a 1-D node given a unit W axis: [k] -> [k, 1] (kernel_shape,
// strides, dilations), and pads [b, e] -> [b, 0, e, 0].
void widen(onnx::NodeProto& n2, onnx::AttributeProto& a) {
  const bool pads = a.name() == "pads";
  const size_t want = pads ? 2 : 1;
  if (size_t(a.ints_size()) != want)
    throw Error("", node_label(n2),
                cat("attribute \"", a.name(), "\" has ", a.ints_size(), " values; a 1-D ",
                    n2.op_type(), " of [N, C, L] takes ", want));
  const std::vector<int64_t> v(a.ints().begin(), a.ints().end());
  a.clear_ints();
  for (int64_t x : pads ? std::vector<int64_t>{v[0], 0, v[1], 0} : std::vector<int64_t>{v[0], 1})
    a.add_ints(x);
}

} // namespace

bool reads_signal(const Converter& c, const onnx::NodeProto& n) {
  int signal = 0, other = 0;
  for (int i = 0; i < n.input_size(); ++i) {
    if (!c.has_input(n, i)) continue;
    const Value& v = c.raw_input(n, i);
    if (v.is_const) continue;
    (v.signal ? signal : other) += 1;
  }
  if (signal == 0) return false;
  if (!signal_ops().count(n.op_type()))
    throw Error("", node_label(n),
                cat("reads a 1-D signal [N, C, L] (rank 3, which kiln holds as [N, C, L, 1]); "
                    "kiln maps only ",
                    signal_list(), " on one"));
  if (other > 0)
    throw Error("", node_label(n),
                "mixes a 1-D signal [N, C, L] with an activation of another rank");
  return true;
}

onnx::NodeProto signal_node(Converter& c, const onnx::NodeProto& n) {
  onnx::NodeProto n2 = n;
  const std::string& op = n.op_type();
  if (window_ops().count(op)) {
    for (auto& a : *n2.mutable_attribute())
      if (a.name() == "kernel_shape" || a.name() == "strides" || a.name() == "dilations" ||
          a.name() == "pads")
        widen(n2, a);
    if (op == "Conv" && c.has_input(n2, 1)) {
      const Value& w = c.raw_input(n2, 1);
      if (w.is_const && w.constant.shape().size() != 3)
        throw Error("", node_label(n),
                    cat("weight has shape ", shape_str(w.constant.shape()),
                        "; a 1-D Conv of [N, C, L] takes [M, C / group, k]"));
      if (w.is_const) {
        Shape s = w.constant.shape();
        s.push_back(1);
        reshape_constant(c, n2, 1, s);
      }
    }
  } else if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div") {
    for (int i = 0; i < n2.input_size(); ++i) {
      if (!c.has_input(n2, i)) continue;
      const Value& v = c.raw_input(n2, i);
      if (!v.is_const || v.constant.shape().empty()) continue;
      Shape s = v.constant.shape();
      if (s.size() > 3)
        throw Error("", node_label(n),
                    cat("broadcasts the constant \"", n.input(i), "\" of shape ", shape_str(s),
                        " against a 1-D signal [N, C, L]: the result would have rank ", s.size()));
      s.push_back(1); // ONNX aligns the last axes: [C, 1] of [N, C, L] is [C, 1, 1]
      reshape_constant(c, n2, i, s);
    }
  } else if (op == "Flatten" || op == "Concat") {
    for (auto& a : *n2.mutable_attribute())
      if (a.name() == "axis" && a.type() == onnx::AttributeProto::INT && a.i() < 0)
        a.set_i(a.i() + 3); // from the end of [N, C, L]; the first axes are kiln's
  }
  return n2;
}

Error signal_error(const Error& e) {
  return Error("", e.where(),
               e.message() + " (the node reads a 1-D signal, converted in its 2-D form: "
                             "kiln's [N, C, L, 1] is ONNX's [N, C, L], and its constants and "
                             "window attributes gain a trailing 1)");
}

void mark_signal(Converter& c, const onnx::NodeProto& n) {
  for (int i = 0; i < n.output_size(); ++i) {
    auto it = c.values.find(n.output(i));
    if (it == c.values.end() || it->second.is_const || it->second.unavailable) continue;
    // A pending piece of an activation (pattern.cpp) is a signal when its x is.
    const Value& v = it->second;
    const int ref = v.pending ? v.pending->x : v.ref;
    if (c.shape_of(ref).size() == 4) it->second.signal = true;
  }
}

} // namespace kiln::onnx_import
