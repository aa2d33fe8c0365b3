#include "generator/model/onnx/layer_norm_pattern.hpp"

#include "generator/model/onnx/tensor_proto.hpp"

#include <map>
#include <optional>
#include <set>
#include <vector>

namespace kiln::onnx_import {

namespace {

class Graph {
public:
  explicit Graph(const onnx::GraphProto& g) : g_(g) {
    for (int i = 0; i < g.node_size(); ++i) {
      for (const std::string& o : g.node(i).output())
        producer_[o] = i;
      for (const std::string& in : g.node(i).input()) {
        ++uses_[in];
        std::vector<int>& r = readers_[in];
        if (r.empty() || r.back() != i) r.push_back(i);
      }
    }
    for (const auto& o : g.output())
      ++uses_[o.name()];
    for (const auto& t : g.initializer())
      init_[t.name()] = &t;
  }

  // The node producing `value` when it is an `op` node, else nullptr.
  const onnx::NodeProto* made_by(const std::string& value, std::string_view op) const {
    const auto it = producer_.find(value);
    if (it == producer_.end()) return nullptr;
    const onnx::NodeProto& n = g_.node(it->second);
    return n.op_type() == op && n.domain().empty() ? &n : nullptr;
  }
  int index_of(const std::string& output) const { return producer_.at(output); }
  int uses(const std::string& value) const {
    const auto it = uses_.find(value);
    return it == uses_.end() ? 0 : it->second;
  }
  // The nodes reading `value`, each once.
  const std::vector<int>& readers(const std::string& value) const {
    static const std::vector<int> none;
    const auto it = readers_.find(value);
    return it == readers_.end() ? none : it->second;
  }

  // The constant `value` (an initializer or a Constant node's), or nullopt.
  std::optional<Tensor> constant(const std::string& value) const {
    try {
      if (const auto it = init_.find(value); it != init_.end())
        return tensor_from_proto(*it->second, "");
      const onnx::NodeProto* k = made_by(value, "Constant");
      if (!k || k->attribute_size() != 1) return std::nullopt;
      const onnx::AttributeProto& a = k->attribute(0);
      if (a.name() == "value" && a.has_t()) return tensor_from_proto(a.t(), "");
      if (a.name() == "value_float") return scalar_tensor(a.f());
      if (a.name() == "value_int") return scalar_tensor(double(a.i()));
    } catch (...) { // external data, odd types: not this pattern's constants
    }
    return std::nullopt;
  }
  bool is_constant(const std::string& value) const { return constant(value).has_value(); }
  std::optional<double> scalar(const std::string& value) const {
    const auto t = constant(value);
    if (!t || t->numel() != 1) return std::nullopt;
    return t->get(0);
  }

private:
  static Tensor scalar_tensor(double v) {
    Tensor t(DType::f32, {});
    t.set(0, v);
    return t;
  }
  const onnx::GraphProto& g_;
  std::map<std::string, int> producer_, uses_;
  std::map<std::string, std::vector<int>> readers_;
  std::map<std::string, const onnx::TensorProto*> init_;
};

// The one axis a ReduceMean with keepdims reduces over, or nullopt.
std::optional<int64_t> single_axis(const Graph& gr, const onnx::NodeProto& n, int opset) {
  std::vector<int64_t> axes;
  for (const auto& a : n.attribute()) {
    if (a.name() == "keepdims" && a.i() != 1) return std::nullopt;
    if (a.name() == "axes") axes.assign(a.ints().begin(), a.ints().end());
    if (a.name() == "noop_with_empty_axes" && a.i() != 0) return std::nullopt;
  }
  if (opset >= 18 && n.input_size() > 1 && !n.input(1).empty()) {
    const auto t = gr.constant(n.input(1));
    if (!t) return std::nullopt;
    for (int64_t i = 0; i < t->numel(); ++i)
      axes.push_back(int64_t(t->get(i)));
  }
  if (axes.size() != 1) return std::nullopt;
  return axes[0];
}

// The other input of a two-input node than `value`, or "" when `value` is not an input.
std::string other_input(const onnx::NodeProto& n, const std::string& value) {
  if (n.input_size() != 2) return "";
  if (n.input(0) == value) return n.input(1);
  if (n.input(1) == value) return n.input(0);
  return "";
}

// The single reader of `value` when it is an `op` node and `value` is read once.
const onnx::NodeProto* only_reader(const onnx::GraphProto& g, const Graph& gr,
                                   const std::string& value, std::string_view op) {
  if (gr.uses(value) != 1) return nullptr;
  const std::vector<int>& r = gr.readers(value);
  if (r.size() != 1) return nullptr;
  const onnx::NodeProto& n = g.node(r[0]);
  return n.op_type() == op && n.domain().empty() ? &n : nullptr;
}

struct Match {
  std::set<int> nodes; // every node of the chain
  int last = -1;       // the node whose output the chain's result is
  std::string x, scale, bias;
  double eps = 0;
  int64_t axis = 0;
};

// The chain starting at the ReduceMean node `mean`, if it is one.
std::optional<Match> match_at(const onnx::GraphProto& g, const Graph& gr, int mean, int opset) {
  const onnx::NodeProto& m1 = g.node(mean);
  if (m1.op_type() != "ReduceMean" || !m1.domain().empty() || m1.output_size() != 1)
    return std::nullopt;
  const auto axis = single_axis(gr, m1, opset);
  if (!axis) return std::nullopt;
  Match r;
  r.x = m1.input(0);
  r.axis = *axis;
  const onnx::NodeProto* sub = only_reader(g, gr, m1.output(0), "Sub");
  if (!sub || sub->input(0) != r.x || sub->input(1) != m1.output(0)) return std::nullopt;
  const std::string d = sub->output(0);
  // d is read twice: by the square and by the Div (Mul(d, d) reads it twice itself).
  const onnx::NodeProto *sq = nullptr, *div = nullptr;
  for (int i : gr.readers(d)) {
    const onnx::NodeProto& n = g.node(i);
    if (n.op_type() == "Div" && n.input_size() == 2 && n.input(0) == d && n.input(1) != d)
      div = &n;
    else if (n.op_type() == "Pow" && n.input_size() == 2 && n.input(0) == d &&
             gr.scalar(n.input(1)) == 2.0)
      sq = &n;
    else if (n.op_type() == "Mul" && n.input_size() == 2 && n.input(0) == d && n.input(1) == d)
      sq = &n;
    else
      return std::nullopt;
  }
  const int d_reads = sq && sq->op_type() == "Mul" ? 3 : 2;
  if (!sq || !div || gr.uses(d) != d_reads) return std::nullopt;
  const onnx::NodeProto* m2 = only_reader(g, gr, sq->output(0), "ReduceMean");
  if (!m2 || single_axis(gr, *m2, opset) != r.axis) return std::nullopt;
  const onnx::NodeProto* add = only_reader(g, gr, m2->output(0), "Add");
  if (!add) return std::nullopt;
  const auto eps = gr.scalar(other_input(*add, m2->output(0)));
  if (!eps || *eps < 0) return std::nullopt;
  r.eps = *eps;
  const onnx::NodeProto* sqrt = only_reader(g, gr, add->output(0), "Sqrt");
  if (!sqrt || div->input(1) != sqrt->output(0) || gr.uses(sqrt->output(0)) != 1)
    return std::nullopt;
  for (const onnx::NodeProto* n : {&m1, sub, sq, m2, add, sqrt, div})
    r.nodes.insert(gr.index_of(n->output(0)));
  std::string y = div->output(0);
  // Optional scale, then optional bias: constants, either operand order.
  if (const onnx::NodeProto* mul = only_reader(g, gr, y, "Mul")) {
    const std::string k = other_input(*mul, y);
    if (!k.empty() && gr.is_constant(k)) {
      r.scale = k;
      y = mul->output(0);
      r.nodes.insert(gr.index_of(y));
    }
  }
  if (const onnx::NodeProto* add_b = only_reader(g, gr, y, "Add")) {
    const std::string k = other_input(*add_b, y);
    if (!k.empty() && gr.is_constant(k)) {
      r.bias = k;
      y = add_b->output(0);
      r.nodes.insert(gr.index_of(y));
    }
  }
  r.last = gr.index_of(y);
  return r;
}

} // namespace

int fuse_layer_norm_patterns(onnx::GraphProto& g, int opset) {
  std::vector<Match> found;
  {
    const Graph gr(g);
    std::set<int> taken;
    for (int i = 0; i < g.node_size(); ++i)
      if (auto m = match_at(g, gr, i, opset)) {
        bool overlaps = false;
        for (int k : m->nodes)
          overlaps = overlaps || taken.count(k);
        if (overlaps) continue;
        taken.insert(m->nodes.begin(), m->nodes.end());
        found.push_back(std::move(*m));
      }
  }
  if (found.empty()) return 0;
  std::map<int, const Match*> at_last;
  std::set<int> drop;
  for (const Match& m : found) {
    at_last[m.last] = &m;
    drop.insert(m.nodes.begin(), m.nodes.end());
  }
  google::protobuf::RepeatedPtrField<onnx::NodeProto> kept;
  for (int i = 0; i < g.node_size(); ++i) {
    if (const auto it = at_last.find(i); it != at_last.end()) {
      const Match& m = *it->second;
      const onnx::NodeProto& last = g.node(i);
      onnx::NodeProto ln;
      ln.set_op_type("LayerNormalization");
      ln.set_name(last.name());
      ln.add_input(m.x);
      ln.add_input(m.scale); // "": ones (the rewritten node's own convention)
      if (!m.bias.empty()) ln.add_input(m.bias);
      ln.add_output(last.output(0));
      auto* axis = ln.add_attribute();
      axis->set_name("axis");
      axis->set_type(onnx::AttributeProto::INT);
      axis->set_i(m.axis);
      auto* eps = ln.add_attribute();
      eps->set_name("epsilon");
      eps->set_type(onnx::AttributeProto::FLOAT);
      eps->set_f(float(m.eps));
      auto* marker = ln.add_attribute();
      marker->set_name(kReducedAxisAttr);
      marker->set_type(onnx::AttributeProto::INT);
      marker->set_i(1);
      *kept.Add() = std::move(ln);
    } else if (!drop.count(i)) {
      *kept.Add() = g.node(i);
    }
  }
  g.mutable_node()->Swap(&kept);
  return int(found.size());
}

} // namespace kiln::onnx_import
