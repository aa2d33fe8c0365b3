// Mul, Div, Erf and Add on activations: Mul of two activations is kiln's mul (squeeze-excite
// broadcasts [N, C, 1, 1] over H, W), and exporters write activations kiln has as layers:
// SiLU as x * Sigmoid(x), HardSwish (before opset 14) as x * HardSigmoid(x) with alpha 1/6
// and beta 1/2, GELU (before opset 20) as x / sqrt 2 -> Erf -> + 1 -> * x -> * 0.5 in any
// order of the products. The GELU pieces are Pending values (converter.hpp) until the whole
// expression is there; on constants these operators are computed (const_ops.cpp).
#include "generator/model/onnx/node_attrs.hpp"
#include "generator/model/onnx/ops.hpp"
#include "runtime/error.hpp"

#include <cmath>

namespace kiln::onnx_import {

namespace {

constexpr double kSqrtHalf = 0.70710678118654752440;

bool near(double a, double b) { return std::fabs(a - b) <= 1e-6 * std::fabs(b); }

Error not_a_pattern(const onnx::NodeProto& n, const std::string& what) {
  return Error("", node_label(n),
               cat(what, ": kiln imports ", n.op_type(),
                   " on activations only inside SiLU (x * sigmoid(x)), HardSwish (x * "
                   "hardsigmoid(x)) and GELU (x * 0.5 * (1 + erf(x / sqrt 2)))"));
}

// The value as a pending expression: itself when pending, else the activation x alone.
Pending pending_of(const Converter& c, const onnx::NodeProto& n, int i) {
  const Value& v = c.raw_input(n, i);
  if (v.pending) return *v.pending;
  Pending p;
  p.x = c.activation(n, i);
  p.has_x = true;
  p.from = node_label(n);
  return p;
}

// A scalar constant at input i, or nullopt when that input is not one.
std::optional<double> scalar(const Converter& c, const onnx::NodeProto& n, int i) {
  const Value& v = c.raw_input(n, i);
  if (!v.is_const || v.constant.numel() != 1) return std::nullopt;
  return v.constant.get(0);
}

// The pending expression as the node's output, or GELU's layer when it is complete.
void set_pending(Converter& c, const onnx::NodeProto& n, Pending p) {
  if (p.has_x && p.erf == 2 && near(p.coef, 0.5) && near(p.k, kSqrtHalf)) {
    c.add_layer(n, OpKind::gelu, {}, {p.x});
    return;
  }
  Value v;
  v.ref = p.x;
  v.pending = std::move(p);
  c.set_output(n, 0, v);
}

// Whether `gate` is a layer f(x) read only by node n (the Mul that would absorb it).
bool gate_of(const Converter& c, const onnx::NodeProto& n, int gate_input, int x, OpKind f) {
  const int gate = c.raw_input(n, gate_input).ref;
  if (gate < 0 || c.raw_input(n, gate_input).pending) return false;
  const Node& g = c.model.nodes[gate];
  const std::string& name = n.input(gate_input);
  return g.op == f && g.inputs.size() == 1 && g.inputs[0] == x && c.uses.count(name) &&
         c.uses.at(name) == 1;
}

} // namespace

void convert_mul(Converter& c, const onnx::NodeProto& n) {
  if (c.all_inputs_const(n)) return convert_arith(c, n);
  const NodeAttrs at(n, {});
  const Value& a = c.raw_input(n, 0);
  const Value& b = c.raw_input(n, 1);
  if (!a.is_const && !b.is_const && !a.pending && !b.pending) {
    // x * f(x): the gate layer becomes the activation f stood for.
    for (int g = 0; g < 2; ++g) {
      const int x = c.raw_input(n, 1 - g).ref;
      const int gate = c.raw_input(n, g).ref;
      OpKind to;
      if (gate_of(c, n, g, x, OpKind::sigmoid))
        to = OpKind::silu;
      else if (gate_of(c, n, g, x, OpKind::hardsigmoid) &&
               near(c.model.nodes[gate].attrs.alpha, 1.0 / 6) &&
               near(c.model.nodes[gate].attrs.beta, 0.5))
        to = OpKind::hardswish;
      else
        continue;
      Node& layer = c.model.nodes[gate];
      layer.op = to;
      layer.attrs = {};
      Value v;
      v.ref = gate;
      c.set_output(n, 0, v);
      return;
    }
    // Any other product of two activations: kiln's mul, the [N, C, 1, 1] one second.
    const int x0 = a.ref, x1 = b.ref;
    const Shape &s0 = c.shape_of(x0), &s1 = c.shape_of(x1);
    const auto gate_shape = [](const Shape& full, const Shape& g) {
      return full.size() == 4 && g == Shape{full[0], full[1], 1, 1};
    };
    if (s0 == s1 || gate_shape(s0, s1)) return void(c.add_layer(n, OpKind::mul, {}, {x0, x1}));
    if (gate_shape(s1, s0)) return void(c.add_layer(n, OpKind::mul, {}, {x1, x0}));
    throw Error("", node_label(n),
                cat("multiplies ", shape_str(s0), " by ", shape_str(s1),
                    ": kiln's mul takes two activations of one shape, or [N, C, H, W] by its "
                    "[N, C, 1, 1]"));
  }
  if (a.is_const || b.is_const) { // a scalar factor of a pending expression
    const int k = a.is_const ? 0 : 1;
    const auto s = scalar(c, n, k);
    if (!s && !c.raw_input(n, 1 - k).pending) return scale_channels(c, n, k, false);
    if (!s)
      throw not_a_pattern(n, cat("multiplies an activation by a constant of shape ",
                                 shape_str(c.raw_input(n, k).constant.shape())));
    Pending p = pending_of(c, n, 1 - k);
    p.coef *= *s;
    return set_pending(c, n, p);
  }
  Pending p = pending_of(c, n, 0), q = pending_of(c, n, 1);
  if (p.x != q.x || (p.has_x && q.has_x) || (p.erf && q.erf))
    throw not_a_pattern(n, "multiplies two activations");
  p.coef *= q.coef;
  p.has_x = p.has_x || q.has_x;
  if (q.erf) p.erf = q.erf, p.k = q.k;
  set_pending(c, n, p);
}

void convert_div(Converter& c, const onnx::NodeProto& n) {
  if (c.all_inputs_const(n)) return convert_arith(c, n);
  const NodeAttrs at(n, {});
  const auto s = scalar(c, n, 1);
  if (!c.raw_input(n, 0).is_const && !c.raw_input(n, 0).pending && c.raw_input(n, 1).is_const && !s)
    return scale_channels(c, n, 1, true);
  if (c.raw_input(n, 0).is_const || !s || *s == 0)
    throw not_a_pattern(n, "divides by something other than a nonzero scalar constant");
  Pending p = pending_of(c, n, 0);
  p.coef /= *s;
  set_pending(c, n, p);
}

void convert_erf(Converter& c, const onnx::NodeProto& n) {
  const NodeAttrs at(n, {});
  if (c.raw_input(n, 0).is_const) throw Error("", node_label(n), "Erf of a constant is not folded");
  const Pending p = pending_of(c, n, 0);
  if (!p.has_x || p.erf) throw not_a_pattern(n, "takes the erf of more than a multiple of x");
  Pending e;
  e.x = p.x;
  e.erf = 1;
  e.k = p.coef;
  e.from = node_label(n);
  set_pending(c, n, e);
}

bool add_pending(Converter& c, const onnx::NodeProto& n) {
  const Value& a = c.raw_input(n, 0);
  const Value& b = c.raw_input(n, 1);
  if (!a.pending && !b.pending) return false;
  const int pi = a.pending ? 0 : 1;
  const auto s = scalar(c, n, 1 - pi);
  Pending p = *c.raw_input(n, pi).pending;
  if (!s || *s != 1 || p.erf != 1 || p.has_x || p.coef != 1)
    throw not_a_pattern(n, "adds to a pending expression other than 1 + erf(k x)");
  p.erf = 2;
  set_pending(c, n, p);
  return true;
}

} // namespace kiln::onnx_import
