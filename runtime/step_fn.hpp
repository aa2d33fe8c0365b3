// The functions a plan step computes: each op's forward and backward pieces, the loss,
// the update and plain copies. Every backend implements the ones it supports; the cpu
// backend implements all of them with the reference ops. Each function's definition (its
// signature, parameters, shape checks and CPU reference) is in runtime/ops/, in the file
// named by the part of its name before the dot (conv2d.forward: runtime/ops/conv2d.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace kiln {

// Each value's arguments and semantics are documented with its definition in runtime/ops/.
// Compacted sparse activations (runtime/sparse_form.hpp) are written by sparse.compact (the
// form of its x) or by a producer (relu, batchnorm, conv) of its own output y; `nnz` and
// `y_nnz` are running counts a step adds to (zeroed first by fill_zero); a guarded step reads
// `nnz` to choose its path (step_params.hpp's SparseDispatch).
enum class Fn {
  conv2d_forward,              // x, w, [b], [residual], [nnz] -> y (epilogue), [compacted y]
  conv2d_fold_bn,              // w, [b], batchnorm's parameters -> w_out, b_out (FoldBn)
  conv2d_backward_data,        // dy, w -> dx
  conv2d_backward_weight,      // x, dy, [nnz] -> dw
  linear_forward,              // x, w, [b] -> y (epilogue)
  linear_backward_data,        // dy, w -> dx
  linear_backward_weight,      // x, dy -> dw
  bias_backward,               // dy -> db (conv2d or linear)
  batchnorm_forward,           // x, parameters -> y (inference; epilogue), [compacted y]
  batchnorm_forward_train,     // x, weight, bias -> y (epilogue), [mean, invstd] (batch statistics)
  batchnorm_backward,          // x, dy, weight, [mean, invstd] -> dx, dweight, dbias
  relu_forward,                // x -> y, [compacted y]
  relu_backward,               // y, dy -> dx
  maxpool2d_forward,           // x -> y
  maxpool2d_backward,          // x, dy -> dx
  avgpool2d_forward,           // x -> y
  avgpool2d_backward,          // dy -> dx
  adaptive_avgpool2d_forward,  // x -> y (also global_avgpool)
  adaptive_avgpool2d_backward, // dy -> dx
  add_forward,                 // x0, x1, ... -> y
  concat_forward,              // x0, x1, ... -> y (ChannelSlice)
  concat_backward,             // dy -> dx (ChannelSlice)
  resize_forward,              // x -> y
  resize_backward,             // dy -> dx
  softmax_forward,             // x -> y
  softmax_backward,            // y, dy -> dx
  softmax_xent_forward,        // logits, target -> probs, loss
  softmax_xent_backward,       // probs, target -> dlogits
  copy,                        // src -> dst (add's backward, a view's gradient)
  convert,                     // src -> dst: same logical shape, another layout or dtype
  region_copy,                 // src -> dst: a spatial window (Region; tiled segments)
  fill_zero,                   // -> dst: zeros
  sgd_update,                  // grad -> param, [velocity] in place (Sgd)
  sparse_compact,              // x -> values, index, count, [nnz (added to)]
  conv2d_forward_sparse,       // conv2d.forward from the compacted x
  conv2d_backward_weight_sparse, // conv2d.backward_weight from the compacted x, or partials
  partial_sum,                   // partial [S, ...], [b], [residual], [nnz] -> dst (epilogue)
  adam_update,                   // grad, step -> param, m, v in place (Adam)
  mse_forward,                   // logits, target (floats) -> loss [1]
  mse_backward,                  // logits, target -> dlogits
  conv2d_forward_partial,        // split-K: x, w -> partial [S * N, O, OH, OW]
  linear_forward_partial,        // split-K: x, w -> partial [S * N, K]
  conv2d_pool_forward,           // x, w, [b] -> maxpool(epilogue(conv)) (FusedPool)
  hardswish_forward,             // x -> y
  hardswish_backward,            // x, dy -> dx
  clip_forward,                  // x -> y
  clip_backward,                 // x, dy -> dx
  hardsigmoid_forward,           // x -> y
  hardsigmoid_backward,          // x, dy -> dx
  sigmoid_forward,               // x -> y
  sigmoid_backward,              // x, dy -> dx
  silu_forward,                  // x -> y
  silu_backward,                 // x, dy -> dx
  gelu_forward,                  // x -> y
  gelu_backward,                 // x, dy -> dx
  gelu_tanh_forward,             // x -> y
  gelu_tanh_backward,            // x, dy -> dx
  mul_forward,                   // x0, x1 -> y (x1 may be [N, C, 1, 1])
  mul_backward,                  // x (the other input), dy -> dx (reduced for a broadcast input)
  conv_transpose2d_forward,      // x, w, [b] -> y (its gradients are conv2d functions)
  pad_forward,                   // x -> y
  pad_backward,                  // dy -> dx
  layernorm_forward,             // x, weight, bias -> y
  layernorm_backward,            // x, dy, weight -> dx, [mean, invstd] (per position)
  layernorm_backward_params,     // x, dy, mean, invstd -> dweight, dbias
  layernorm_invstd_forward,      // x -> y (1 / sqrt(var + eps) per position)
  layernorm_invstd_backward,     // x, dy -> dx
  channel_shuffle_forward,       // x -> y
  channel_shuffle_backward,      // dy -> dx (the inverse shuffle)
  channel_slice_forward,         // x -> y (channels [begin, end) of x)
  channel_slice_backward,        // dy -> dx (dy in channels [begin, end), zeros elsewhere)
  tensor_map_encode,             // -> map: a TMA tensor map of a named buffer (TensorMapEncode)
  reduce_sum_forward,            // x -> y
  reduce_sum_backward,           // dy -> dx (dy spread over the reduced axes)
  reduce_mean_forward,           // x -> y
  reduce_mean_backward,          // dy -> dx (dy / count spread over the reduced axes)
  reduce_max_forward,            // x -> y
  reduce_max_backward,           // x, dy -> dx (dy at each output's first maximum, 0 elsewhere)
  // Split-K completed in one kernel: x, w, [b], [residual], tickets -> y, partial (the S fp32
  // slices, workspace); the last of a tile's S blocks adds them in order 0..S-1 and applies
  // the epilogue. tickets: i32 per output tile, zero before and after every launch.
  conv2d_forward_split,
  linear_forward_split,
  // A channels-last batchnorm's per-chunk sums over rows (runtime/ops/batchnorm_chunks.hpp):
  // x, [dy] -> partial [R, 2 or 4, C] fp32, read by the forward_train / backward after it.
  batchnorm_partials,
  // w [O, C, KH, KW] -> w_out [C, O, KH, KW], each filter turned 180 degrees: a stride-1
  // conv's data gradient as a forward conv of dy (rewrite/backward_data_as_conv.hpp).
  conv2d_flip_weight,
  space_to_depth_forward,  // x -> y
  space_to_depth_backward, // dy -> dx (a gather: each dx element from its one dy element)
};
// The number of functions: the last one's value + 1 (the registry checks it).
inline constexpr size_t kFnCount = size_t(Fn::space_to_depth_backward) + 1;

// The first k of range s of S over a reduction of K (s = S gives K): whole multiples of 16
// (a tensor core's k step), as evenly spread as they go.
constexpr int64_t split_k_begin(int64_t K, int64_t S, int64_t s) {
  return s >= S ? K : 16 * (s * ((K + 15) / 16) / S);
}

std::string_view fn_name(Fn f);
std::optional<Fn> parse_fn(std::string_view name);

// Argument roles: the inputs read and outputs written (`x*` means x0, x1, ...).
struct FnSignature {
  std::span<const std::string_view> reads = {};
  std::span<const std::string_view> writes = {};
  std::span<const std::string_view> optional = {}; // subset of reads and writes that may be absent
  // Subset of writes that the step adds to (read-modify-write): they must hold a value
  // already, like every output of an accumulating step.
  std::span<const std::string_view> updates = {};
};
bool fn_reads(Fn f, std::string_view role);
bool fn_writes(Fn f, std::string_view role);
bool fn_updates(Fn f, std::string_view role);
FnSignature fn_signature(Fn f);

} // namespace kiln
