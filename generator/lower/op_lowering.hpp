// How the generator lowers each op to plan steps, found by the op's name in
// generator/lower/ops/<op>.cpp and registered in ops/registry.cpp: the function computing
// its output (inference and training), the argument role of each parameter, its training
// rule (the steps of its input and parameter gradients, and what they read), and whether
// segmented fused tiling can run it tile by tile. The inference lowering, the training
// lowering and the tiles of a tiled segment all lower an op through these rules, so each is
// written once. (What an op means — attributes, shape rule, CPU reference — is runtime's:
// runtime/ops/.)
#pragma once

#include "generator/model/model.hpp"
#include "runtime/plan.hpp"
#include "schedules/tiling.hpp"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace kiln {

// Where a backward rule emits its steps: the untiled training lowering, or one tile of a
// tiled segment (whose buffers are the tile's regions and whose attributes carry the tile's
// padding). Buffers are plan buffer indices.
class BackwardSite {
public:
  virtual ~BackwardSite() = default;
  virtual const Model& model() const = 0;
  virtual int node() const = 0;
  virtual Attrs attrs() const = 0; // the node's attributes as its steps carry them
  virtual int dy() const = 0;      // the gradient of the node's output
  virtual int output() = 0;        // the node's forward output
  virtual int input(int k) = 0;    // the forward value of the node's input k
  virtual int param(const char* suffix) = 0;
  virtual int param_grad(const char* suffix) = 0;
  virtual int scratch(const std::string& name, const Shape& shape) = 0; // a fresh transient
  virtual void emit(Step s) = 0;

  // A step of this node (with the site's attributes).
  Step step(Fn fn, std::vector<Arg> args) const;
};

struct OpLowering {
  OpKind op{};
  // The function computing the output: in inference plans, and in training steps (batchnorm
  // uses the batch's statistics there). Views have none (they alias their input).
  std::optional<Fn> forward = {}, train_forward = {};
  // The argument role a parameter binds in the forward step: "w"/"b" for weight and bias
  // by default (conv2d, linear), the suffix itself for others (batchnorm).
  bool params_by_suffix = false;
  // What the gradient of an input reads besides dy (this decides which forward values a
  // schedule keeps alive): the op's output (relu, softmax), the input itself (max pool,
  // batchnorm).
  bool input_grad_reads_output = false, input_grad_reads_input = false;
  // The input gradient's step also writes the parameter gradients (batchnorm): parameter
  // gradients then need a step of their own only when no input gradient is computed.
  bool params_with_input_grad = false;
  // Emits the contribution of this node to the gradient of its input `k` into `dx`,
  // added to what dx holds when `accumulate`. Null for ops without gradients.
  void (*input_grad)(BackwardSite& site, int k, int dx, bool accumulate) = nullptr;
  // Every input's gradient is dy unchanged (add): an input that feeds nothing else takes a
  // view of dy as its gradient, no copy (views alias theirs the same way).
  bool input_grad_is_dy = false;
  // Emits the gradients of the node's trained parameters (added to them when `accumulate`:
  // tiles sum their contributions in tile order).
  void (*param_grads)(BackwardSite& site, bool accumulate) = nullptr;
  // Whether a tiled segment may run this node tile by tile, and its window per axis.
  bool (*tileable)(const Node& n, bool train) = nullptr;
  sched::Window (*window)(const Attrs& a, int axis) = nullptr;
  // Splits a forward step the kernels cannot take whole (a concat of many inputs).
  std::vector<Step> (*split_forward)(const Step& s, const Model& m, const Node& n) = nullptr;
};

// The rules of an op (every OpKind has them).
const OpLowering& op_lowering(OpKind op);

// The forward step's arguments for node `n`: its inputs as "x" (or "x0", "x1", ... for ops
// of several inputs), then its parameters (trainable ones only when `train`) through
// `param(suffix)`, then "y".
std::vector<Arg> forward_args(const Model& m, int n, const std::vector<int>& inputs, bool train,
                              const std::function<int(const std::string&)>& param, int y);

} // namespace kiln
