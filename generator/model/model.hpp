// The model IR: a DAG of nodes (ops with attributes) in topological order, with the
// inferred output shape of every node. Built by the loader (model_json), changed by
// transforms (fold, overrides), read by everything downstream.
#pragma once

#include "runtime/dtype.hpp"
#include "runtime/op.hpp"
#include "runtime/shape.hpp"

#include <optional>
#include <string>
#include <vector>

namespace kiln {

struct Hints {
  std::optional<double> activation_density; // expected fraction of nonzeros in the input
  std::optional<std::string> variant;       // "sparse" or "dense": force the family or forbid it
  // The density at or below which a dispatch takes the sparse path, instead of the cost
  // model's crossover (a dispatch is then planned whatever the predicted win).
  std::optional<double> sparse_threshold;
  bool operator==(const Hints&) const = default;
};

// A reference to a value: a node index, or the model input.
constexpr int kModelInput = -1;

struct Node {
  std::string name;
  OpKind op = OpKind::relu;
  Attrs attrs;
  std::vector<int> inputs; // node indices (smaller than this node's), or kModelInput
  Hints hints;
  Shape shape; // inferred output shape
};

struct Model {
  std::string name;
  std::string input_name = "input";
  Shape input_shape;
  // A 1-D signal model: its input is [N, C, L] (the JSON's and the caller's shape), held as
  // [N, C, L, 1] so that every 2-D op runs it; its 4-D outputs are handed out as [N, C, L].
  bool signal = false;
  DType dtype = DType::f32;
  std::vector<Node> nodes; // topological order
  std::vector<int> outputs;
  std::string file; // where it was loaded from, for messages

  int find(std::string_view node_name) const; // -1 if absent
  const Shape& shape_of(int ref) const { return ref == kModelInput ? input_shape : nodes[ref].shape; }
  const std::string& name_of(int ref) const { return ref == kModelInput ? input_name : nodes[ref].name; }
  std::vector<Shape> input_shapes(int node) const;
  std::vector<ParamSpec> params(int node) const;
  int64_t macs(int node) const;
  int64_t total_params() const; // trainable parameters
  int64_t total_macs() const;
  // Consumers of each node's output (and of the model input, at index nodes.size()).
  std::vector<std::vector<int>> consumers() const;
};

// The input as the caller gives it ([N, C, L] for a signal model, else input_shape).
Shape caller_input_shape(const Model& m);
// An output's shape as the caller sees it: [N, C, L, 1] of a signal model is [N, C, L].
Shape caller_output_shape(const Model& m, const Shape& s);

// Infers every node's output shape in order; throws kiln::Error naming the layer.
void infer_shapes(Model& m);

} // namespace kiln
