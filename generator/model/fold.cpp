#include "generator/model/fold.hpp"

#include "runtime/error.hpp"
#include "runtime/ops/registry.hpp"

#include <cmath>

namespace kiln {

namespace {

// The layers folding widens (runtime/ops: an OpDef's width), and those the unfold may come
// before (its rowwise ops).
bool is_param_layer(OpKind op) { return op_def(op).width != nullptr; }
bool passes_through(OpKind op) { return op_def(op).rowwise; }

std::string unique_name(const Model& m, const std::string& want) {
  std::string n = want;
  for (int k = 2; m.find(n) >= 0 || n == m.input_name; ++k) n = want + "_" + std::to_string(k);
  return n;
}

} // namespace

int last_param_layer(const Model& m) {
  int i = m.outputs.at(0);
  while (!is_param_layer(m.nodes[i].op)) {
    if (!passes_through(m.nodes[i].op) || m.nodes[i].inputs[0] == kModelInput) return -1;
    i = m.nodes[i].inputs[0];
  }
  return i;
}

Model fold_model(const Model& src, const FoldOptions& o) {
  if (o.factor < 2 || o.factor > 64)
    throw Error("", "--factor", cat("must be between 2 and 64, got ", o.factor));
  const double mult = o.multiplier.value_or(std::sqrt(double(o.factor)));
  if (!(mult > 0) || mult > 64)
    throw Error("", "--multiplier", cat("must be in (0, 64], got ", mult));
  if (src.input_shape.size() != 4)
    throw Error(src.file, "/input/shape", "folding needs an image input [N, C, H, W]");
  for (const Node& n : src.nodes)
    if (n.op == OpKind::fold || n.op == OpKind::unfold)
      throw Error(src.file, cat("layer \"", n.name, "\""), "the model is already folded");
  const int last = last_param_layer(src);
  if (last < 0)
    throw Error(src.file, cat("layer \"", src.nodes[src.outputs[0]].name, "\""),
                "the first output is not produced by a conv2d or linear layer (through relu, "
                "softmax or flatten), so there is no last layer to widen to factor*K outputs");

  Model m;
  m.name = src.name + "_folded" + std::to_string(o.factor);
  m.input_name = src.input_name;
  m.input_shape = src.input_shape;
  m.input_shape[0] = (m.input_shape[0] + o.factor - 1) / o.factor * o.factor;
  m.dtype = src.dtype;
  m.file = src.file;

  // New indices: fold at 0, source node i at i + 1, unfold right after the last layer.
  auto remap = [&](int r) { return r == kModelInput ? 0 : (r > last ? r + 2 : r + 1); };
  Node fold;
  fold.name = unique_name(src, "fold");
  fold.op = OpKind::fold;
  fold.attrs.factor = o.factor;
  fold.inputs = {kModelInput};
  m.nodes.push_back(fold);
  const int unfold_index = last + 2;
  for (size_t i = 0; i < src.nodes.size(); ++i) {
    Node n = src.nodes[i];
    for (int& r : n.inputs) r = r == last ? unfold_index : remap(r);
    if (int(i) == last) {
      n.inputs = src.nodes[i].inputs;
      for (int& r : n.inputs) r = remap(r);
    }
    int64_t* width = op_def(n.op).width ? &(n.attrs.*op_def(n.op).width) : nullptr;
    if (width && int(i) == last) *width *= o.factor;
    else if (width) *width = std::max<int64_t>(1, int64_t(double(*width) * mult));
    // Depthwise convs stay depthwise.
    if (n.op == OpKind::conv2d && n.attrs.groups > 1 &&
        n.attrs.groups == src.input_shapes(int(i))[0][1])
      n.attrs.groups = -1; // resolved below, once input widths are known
    m.nodes.push_back(std::move(n));
    if (int(i) == last) {
      Node unfold;
      unfold.name = unique_name(src, src.nodes[i].name + ".unfold");
      unfold.op = OpKind::unfold;
      unfold.attrs.factor = o.factor;
      unfold.inputs = {int(m.nodes.size()) - 1};
      m.nodes.push_back(unfold);
    }
  }
  for (int out : src.outputs) m.outputs.push_back(out == last ? unfold_index : remap(out));

  // Shapes in order, settling depthwise group counts on the way.
  for (size_t i = 0; i < m.nodes.size(); ++i) {
    Node& n = m.nodes[i];
    if (n.op == OpKind::conv2d && n.attrs.groups == -1) {
      n.attrs.groups = m.shape_of(n.inputs[0])[1];
      n.attrs.out_channels = n.attrs.groups;
    }
    try {
      n.shape = infer_shape(n.op, n.attrs, m.input_shapes(int(i)));
    } catch (const Error& e) {
      std::string what = e.where().empty() ? e.message() : e.where() + " " + e.message();
      throw Error(src.file, cat("layer \"", n.name, "\""),
                  cat("cannot fold by ", o.factor, ": ", what));
    }
  }
  return m;
}

int64_t thop_flops(const Model& m, int node) {
  const Node& n = m.nodes.at(size_t(node));
  const auto flops = op_def(n.op).thop_flops;
  return flops ? flops(n.attrs, m.input_shapes(node), n.shape) : 0;
}

int64_t total_thop_flops(const Model& m) {
  int64_t n = 0;
  for (size_t i = 0; i < m.nodes.size(); ++i) n += thop_flops(m, int(i));
  return n;
}

} // namespace kiln
