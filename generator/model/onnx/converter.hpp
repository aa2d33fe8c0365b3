// The state of one import: each ONNX value is either an activation (a kiln layer's output,
// or the model input) or a constant (initializers, Constant nodes and everything computed
// from constants only, such as the shape arithmetic PyTorch exports before a Reshape).
// Converters read their node's inputs through it and add kiln layers and weights to it.
#pragma once

#include "generator/model/model.hpp"
#include "runtime/tensor.hpp"

#include <onnx/onnx_pb.h> // needs ONNX_ML=1: Debian ships the -ml variant only

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace kiln::onnx_import {

// An expression of one activation x that is not yet a layer: coef * [x] * [erf(k x) or
// 1 + erf(k x)]. Exporters write GELU out of Div, Erf, Add and Mul; pattern.cpp follows them
// and makes one layer when the whole pattern is there. Read by anything else it is an error.
struct Pending {
  int x = kModelInput;
  double coef = 1;
  bool has_x = false; // the factor x
  int erf = 0;        // 0: no erf factor; 1: erf(k x); 2: 1 + erf(k x)
  double k = 1;
  std::string from; // the node that began it, for messages
};

struct Value {
  bool is_const = false;
  // Produced by a node kiln could not import: readers are skipped (their own problems are
  // not knowable), so that one import reports every node that fails on its own.
  bool unavailable = false;
  int ref = kModelInput; // the activation's producer (a node index or kModelInput)
  // The activation as ONNX sees it after a Transpose(0, 2, 3, 1): [N, H, W, C] holding
  // kiln's [N, C, H, W] `ref` (channels_last.cpp). Only the operators of a channels-last
  // region read it (each knows its axes are permuted); Transpose(0, 3, 1, 2) ends it.
  bool channels_last = false;
  // A 1-D signal (signal.cpp): ONNX sees [N, C, L] where kiln holds [N, C, L, 1]. Only the
  // operators signal.cpp lists read it, the window ones through their 2-D form.
  bool signal = false;
  // A channel shuffle in progress (ops_channels.cpp): the activation reshaped to
  // [N, groups, C/groups, H, W], and after Transpose(0, 2, 1, 3, 4) (`groups_transposed`)
  // seen as [N, C/groups, groups, H, W]; the Reshape back to [N, C, H, W] makes the layer.
  // Only Transpose and Reshape read it.
  int64_t groups = 0;
  bool groups_transposed = false;
  // The activation reshaped to 1-D (the dynamo exporter's as_strided: Reshape to [-1], then
  // a Gather of every element in order, which gives the activation back). Only Gather reads it.
  bool flat = false;
  Tensor constant;
  std::optional<Pending> pending;
};

// Thrown by Converter::input for an unavailable value (not a kiln::Error: nothing to report).
struct Unavailable {};

class Converter {
public:
  Converter(Model& model, std::map<std::string, Tensor>& weights, int64_t opset)
      : model(model), weights(weights), opset(opset) {}

  Model& model;
  std::map<std::string, Tensor>& weights;
  const int64_t opset;
  std::map<std::string, Value> values;
  std::map<std::string, int> uses; // readers of each value (node inputs and graph outputs)
  std::set<std::string> taken;     // layer names in use, and the input's
  int folded = 0;                  // nodes computed at import time
  int dropped = 0;                 // Identity / Dropout nodes removed

  // Marks every output of n unavailable (n failed to import).
  void set_unavailable(const onnx::NodeProto& n);
  // Input i is given (present and not the empty name of an omitted optional input).
  bool has_input(const onnx::NodeProto& n, int i) const;
  // A pending expression there is an error naming it (raw_input lets it through).
  const Value& input(const onnx::NodeProto& n, int i) const;
  const Value& raw_input(const onnx::NodeProto& n, int i) const;
  // The activation at input i; a constant there is an error naming `role`.
  int activation(const onnx::NodeProto& n, int i, std::string_view role = "data") const;
  // The constant at input i; an activation there is an error naming `role`.
  const Tensor& constant(const onnx::NodeProto& n, int i, std::string_view role) const;
  bool all_inputs_const(const onnx::NodeProto& n) const;
  // A reference into the model: adding a layer may move it, so callers that add one keep a copy.
  const Shape& shape_of(int ref) const { return model.shape_of(ref); }
  // The nodes (and graph outputs) that read the activation `ref` through any value holding
  // it, less the aliases themselves (a bias Add, a Transpose, Identity: each read the one
  // before it): 1 when a fold into `ref`'s layer changes nothing else.
  int readers(int ref) const;
  // Input i is an activation seen channels-last (Value::channels_last).
  bool channels_last(const onnx::NodeProto& n, int i) const;

  void set_output(const onnx::NodeProto& n, int i, Value v);
  void set_const_output(const onnx::NodeProto& n, Tensor t);
  // Outputs from index `first` on must be unread (e.g. BatchNormalization's running
  // statistics, MaxPool's Indices, Dropout's mask).
  void require_unused_outputs(const onnx::NodeProto& n, int first) const;

  // Adds a layer for node `n`, infers its shape (errors name the node) and makes it the
  // node's first output. `weight_name`: the initializer holding its weight, whose PyTorch
  // module path ("layer1.0.conv1.weight" -> "layer1.0.conv1") names the layer when it has one.
  int add_layer(const onnx::NodeProto& n, OpKind op, const Attrs& a, std::vector<int> inputs,
                const std::string& weight_name = "");
  // Stores parameter `suffix` ("weight", "bias", ...) of `layer` as f32.
  void add_param(int layer, const std::string& suffix, const Tensor& t);
};

// A constant's elements as integers (shape arguments); errors name the node and role.
std::vector<int64_t> const_ints(const onnx::NodeProto& n, const Tensor& t, std::string_view role);
// A constant as f32 (weights).
Tensor as_f32(const Tensor& t);

} // namespace kiln::onnx_import
