// The operators of kiln-model/1 and their attributes: one flat attribute record per node
// (each op reads the fields its schema names), the schema, shape rules and parameters, each
// op's defined in runtime/ops/<op>.cpp. Shared by the model IR (generator) and the plan
// (runtime), so both agree on semantics.
#pragma once

#include "runtime/shape.hpp"

#include <array>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

enum class OpKind {
  conv2d,
  linear,
  batchnorm,
  relu,
  maxpool2d,
  avgpool2d,
  adaptive_avgpool2d,
  global_avgpool,
  add,
  concat,
  flatten,
  resize, // nearest or bilinear over H, W (ONNX Resize; "upsample2d" is a spelling of it)
  softmax,
  fold,             // [N, C, H, W] -> [N/f, f*C, H, W], a view (FoldedCNNs)
  unfold,           // [M, f*K] -> [M*f, K], a view
  hardswish,        // x * relu6(x + 3) / 6 (MobileNetV3)
  clip,             // min(max(x, min), max): ReLU6 is clip(0, 6)
  hardsigmoid,      // max(0, min(1, alpha * x + beta))
  sigmoid,          // 1 / (1 + exp(-x))
  silu,             // x * sigmoid(x) (swish)
  gelu,             // x * Phi(x), the erf form
  gelu_tanh,        // GELU's tanh approximation (PyTorch's approximate="tanh")
  mul,              // x0 * x1, x1 of x0's shape or [N, C, 1, 1] (squeeze-excite's gate)
  conv_transpose2d, // the transposed convolution (conv2d's data gradient as a layer)
  pad,              // constant, reflect or edge padding of H, W
  layernorm,        // over the channels of each position (ONNX LayerNormalization), weight and bias
  channel_shuffle,  // ShuffleNet's: [N, g, C/g, H, W] transposed to [N, C/g, g, H, W], groups = g
  channel_slice,    // channels [begin, end) of x (ONNX Split / Slice on axis 1)
  reduce_sum,       // sum over any of C, H, W (reduce_c/h/w), keepdims as ONNX ReduceSum
  reduce_mean,      // mean over any of C, H, W
  reduce_max,       // max over any of C, H, W (gradient to the first maximum)
  layernorm_invstd, // 1 / sqrt(var + eps) of each position's C channels (LayerNormalization's
                    // InvStdDev)
  space_to_depth,   // S x S blocks of H, W into channels (ONNX SpaceToDepth), padded and sized
};

// clang-format off
inline constexpr OpKind all_ops[] = {
    OpKind::conv2d,     OpKind::linear,         OpKind::batchnorm,          OpKind::relu,
    OpKind::maxpool2d,  OpKind::avgpool2d,      OpKind::adaptive_avgpool2d, OpKind::global_avgpool,
    OpKind::add,        OpKind::concat,         OpKind::flatten,            OpKind::resize,    
    OpKind::softmax,    OpKind::fold,           OpKind::unfold,             OpKind::hardswish,
    OpKind::clip,       OpKind::hardsigmoid,    OpKind::sigmoid,            OpKind::silu,
    OpKind::gelu,       OpKind::gelu_tanh,      OpKind::mul,                OpKind::conv_transpose2d,
    OpKind::pad,        OpKind::layernorm,      OpKind::channel_shuffle,    OpKind::channel_slice,
    OpKind::reduce_sum, OpKind::reduce_mean,    OpKind::reduce_max,         OpKind::layernorm_invstd,
    OpKind::space_to_depth};
// clang-format on

std::string_view op_name(OpKind op);
std::optional<OpKind> parse_op(std::string_view name);

using Int2 = std::array<int64_t, 2>; // [h, w]
using Num2 = std::array<double, 2>;  // [h, w]

// resize's choices, in the order of their names in the attribute schema (runtime/ops/resize.cpp).
enum class ResizeMode { nearest, linear };
enum class CoordinateMode { asymmetric, half_pixel, pytorch_half_pixel, align_corners };
enum class NearestMode { floor, round_prefer_floor, round_prefer_ceil, ceil };
// pad's (runtime/ops/pad.cpp).
enum class PadMode { constant, reflect, edge };

struct Attrs {
  int64_t out_channels = 0; // conv2d; space_to_depth (0: S*S*C)
  int64_t out_features = 0; // linear
  Int2 kernel{0, 0};
  Int2 stride{1, 1};
  Int2 padding{0, 0};       // before the first row / column (also space_to_depth's)
  Int2 padding_end{-1, -1}; // after the last; -1: as `padding` (tiles of a tiled segment differ)
  Int2 dilation{1, 1};
  Int2 output_padding{0, 0}; // conv_transpose2d: rows / columns added after the output
  int64_t groups = 1;
  bool bias = true;
  double eps = 1e-5;
  bool ceil_mode = false;
  bool count_include_pad = true; // avgpool2d, as PyTorch
  Num2 scale{0, 0};              // resize: the coordinate scale per axis (0: size / input)
  Int2 size{0, 0};               // resize: the output's [h, w] (0: floor(input * scale));
                                 // space_to_depth: (0: ceil((input + padding) / factor))
  int64_t mode = 0;              // resize: ResizeMode; pad: PadMode
  double value = 0;              // pad: the constant
  int64_t coordinate_mode = 0;   // resize: CoordinateMode
  int64_t nearest_mode = 0;      // resize: NearestMode
  Int2 output_size{1, 1};        // adaptive_avgpool2d
  int64_t factor = 1;            // fold, unfold; space_to_depth: the block size
  int64_t begin = 0, end = 0;    // channel_slice: channels [begin, end)
  double min = 0, max = 6;       // clip (required in a model: no default bound)
  double alpha = 1.0 / 6, beta = 0.5; // hardsigmoid (PyTorch's; ONNX's default alpha is 0.2)
  bool reduce_c = false, reduce_h = false, reduce_w = false, keepdims = true; // reduce_*
  bool operator==(const Attrs&) const = default;
};

// choice: one of the spec's `choices`, written by name, held as its index.
enum class AttrType { integer, int2, boolean, number, number2, choice };

struct AttrSpec {
  std::string_view name;
  AttrType type;
  bool required;
  std::span<const std::string_view> choices = {}; // AttrType::choice
};

// The attributes an op accepts, in canonical order.
std::span<const AttrSpec> op_attr_specs(OpKind op);

// Inputs an op takes: exact count, or a minimum when `variadic`.
struct Arity {
  int min;
  bool variadic;
};
Arity op_arity(OpKind op);

// True for ops whose output is the input's bytes under another shape (no kernel runs).
bool op_is_view(OpKind op);

// Output shape from the input shapes; throws kiln::Error (no file or place: the caller
// knows the layer) when the inputs do not fit the op.
Shape infer_shape(OpKind op, const Attrs& a, std::span<const Shape> inputs);

// A parameter tensor of a node: name suffix (`weight`, `bias`, `running_mean`, ...),
// shape, and whether it is trained (running statistics are not).
struct ParamSpec {
  std::string suffix;
  Shape shape;
  bool trainable;
};
std::vector<ParamSpec> op_params(OpKind op, const Attrs& a, std::span<const Shape> inputs);

// Multiply-accumulates of conv2d and linear for this output (0 for other ops).
int64_t op_macs(OpKind op, const Attrs& a, std::span<const Shape> inputs, const Shape& out);

// Output extent of a sliding window along one axis (conv: ceil_mode false), with padding p
// before and p_end after the input.
int64_t window_out(int64_t in, int64_t k, int64_t s, int64_t p, int64_t p_end, int64_t d, bool ceil_mode);
inline int64_t window_out(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode) {
  return window_out(in, k, s, p, p, d, ceil_mode);
}
// The padding after the input along each axis.
inline Int2 padding_end(const Attrs& a) {
  return {a.padding_end[0] < 0 ? a.padding[0] : a.padding_end[0], a.padding_end[1] < 0 ? a.padding[1] : a.padding_end[1]};
}

// Adaptive pooling's window [begin, end) for output index i (PyTorch's rule).
inline int64_t adaptive_begin(int64_t i, int64_t in, int64_t out) { return (i * in) / out; }
inline int64_t adaptive_end(int64_t i, int64_t in, int64_t out) {
  return ((i + 1) * in + out - 1) / out;
}

} // namespace kiln
