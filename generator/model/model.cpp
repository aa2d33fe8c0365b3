#include "generator/model/model.hpp"

#include "runtime/error.hpp"

namespace kiln {

int Model::find(std::string_view node_name) const {
  for (size_t i = 0; i < nodes.size(); ++i)
    if (nodes[i].name == node_name) return int(i);
  return -1;
}

std::vector<Shape> Model::input_shapes(int node) const {
  std::vector<Shape> s;
  for (int r : nodes[node].inputs) s.push_back(shape_of(r));
  return s;
}

std::vector<ParamSpec> Model::params(int node) const {
  return op_params(nodes[node].op, nodes[node].attrs, input_shapes(node));
}

int64_t Model::macs(int node) const {
  return op_macs(nodes[node].op, nodes[node].attrs, input_shapes(node), nodes[node].shape);
}

int64_t Model::total_params() const {
  int64_t n = 0;
  for (size_t i = 0; i < nodes.size(); ++i)
    for (const ParamSpec& p : params(int(i)))
      if (p.trainable) n += numel(p.shape);
  return n;
}

int64_t Model::total_macs() const {
  int64_t n = 0;
  for (size_t i = 0; i < nodes.size(); ++i) n += macs(int(i));
  return n;
}

std::vector<std::vector<int>> Model::consumers() const {
  std::vector<std::vector<int>> c(nodes.size() + 1);
  for (size_t i = 0; i < nodes.size(); ++i)
    for (int r : nodes[i].inputs) c[r == kModelInput ? nodes.size() : size_t(r)].push_back(int(i));
  return c;
}

Shape caller_input_shape(const Model& m) {
  return m.signal ? caller_output_shape(m, m.input_shape) : m.input_shape;
}

Shape caller_output_shape(const Model& m, const Shape& s) {
  if (!m.signal || s.size() != 4 || s[3] != 1) return s;
  return {s[0], s[1], s[2]};
}

void infer_shapes(Model& m) {
  for (size_t i = 0; i < m.nodes.size(); ++i) {
    Node& n = m.nodes[i];
    try {
      n.shape = infer_shape(n.op, n.attrs, m.input_shapes(int(i)));
    } catch (const Error& e) {
      // Attribute errors carry the attribute name as their place.
      std::string what = e.where().empty() ? e.message() : e.where() + " " + e.message();
      throw Error(m.file, cat("layer \"", n.name, "\""), cat(op_name(n.op), ": ", what));
    }
  }
}

} // namespace kiln
