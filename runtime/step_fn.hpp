// The functions a plan step computes: each op's forward and backward pieces, the loss,
// the update and plain copies. Every backend implements the ones it supports; the cpu
// backend implements all of them with the reference ops.
#pragma once

#include <optional>
#include <span>
#include <string_view>

namespace kiln {

// Compacted sparse activations (runtime/sparse_form.hpp) are written by sparse.compact
// (values, index, count, nnz: the form of its x), or by a producer step (relu, batchnorm,
// conv) that compacts its own output y as it writes it (y_values, y_index, y_count, y_nnz);
// the sparse convolutions read them (values, index, count). `nnz` and `y_nnz` are running
// counts a step adds to (zeroed first by fill_zero); a guarded step reads `nnz` to choose its
// path.
enum class Fn {
  // x, w, [b], [residual], [nnz: guard] -> y (relu flag: fused epilogue), [compacted y]
  conv2d_forward,
  conv2d_fold_bn,         // w, [b], weight, bias, running_mean, running_var -> w_out, b_out
  conv2d_backward_data,   // dy, w -> dx
  conv2d_backward_weight, // x, dy -> dw
  linear_forward,         // x, w, [b] -> y (relu flag)
  linear_backward_data,   // dy, w -> dx
  linear_backward_weight, // x, dy -> dw
  bias_backward,          // dy -> db (conv2d or linear)
  // x, weight, bias, running_mean, running_var -> y (inference; relu flag), [compacted y]
  batchnorm_forward,
  batchnorm_forward_train, // x, weight, bias -> y, [mean, invstd] (batch statistics)
  // x, dy, weight, [mean, invstd] -> dx, dweight, dbias; without the saved statistics they
  // are recomputed from x exactly as the forward computes them (kiln's plans do this: it
  // keeps nothing but x alive for the backward).
  batchnorm_backward,
  relu_forward,                // x -> y, [compacted y]
  relu_backward,               // y, dy -> dx
  maxpool2d_forward,           // x -> y
  maxpool2d_backward,          // x, dy -> dx
  avgpool2d_forward,           // x -> y
  avgpool2d_backward,          // dy -> dx
  adaptive_avgpool2d_forward,  // x -> y (also global_avgpool)
  adaptive_avgpool2d_backward, // dy -> dx
  add_forward,                 // x0, x1, ... -> y
  concat_forward,              // x0, x1, ... -> y
  concat_backward,             // dy -> dx (the channel slice at `offset`)
  upsample2d_forward,          // x -> y
  upsample2d_backward,         // dy -> dx
  softmax_forward,             // x -> y
  softmax_backward,            // y, dy -> dx
  softmax_xent_forward,        // logits, target -> probs, loss
  softmax_xent_backward,       // probs, target -> dlogits
  copy,                        // src -> dst (add's backward, a view's gradient)
  convert,                     // src -> dst: same logical shape, another layout or dtype
  region_copy, // src -> dst: a spatial window of a 4-D tensor (tiles of a tiled segment)
  fill_zero,   // -> dst: zeros (gradients accumulated from overlapping tiles)
  // param, grad, [velocity] (lr, weight_decay, momentum): as torch.optim.SGD (dampening 0,
  // not Nesterov): g = grad + weight_decay * param; with a velocity, velocity = momentum *
  // velocity + g and g = velocity; param -= lr * g. param and velocity are updated in place.
  sgd_update,
  sparse_compact, // x -> values, index, count, [nnz (added to)]
  // x (its shape; its elements are not read), values, index, count, w, [b], [residual],
  // [nnz: guard] -> y, [compacted y]: conv2d.forward computed from the compacted x.
  conv2d_forward_sparse,
  // x (shape), values, index, count, dy, [nnz: guard] -> dw: conv2d.backward_weight from the
  // compacted x. Or -> partial [S, *dw]: the sums over S contiguous ranges of the input's
  // rows (row r = n * H + h; range s = [s * N*H / S, (s + 1) * N*H / S)), which partial.sum
  // then adds up, so the reduction over the input spreads over S times more blocks.
  conv2d_backward_weight_sparse,
  // partial [S, ...] or [S * N, ...], [b], [residual], [nnz: guard] -> dst [...] or [N, ...]:
  // the sum over the S slices, in order, then the epilogue of the step it completes (+ b per
  // channel, + residual, the relu flag).
  partial_sum,
  // param, grad, m, v, step (lr, beta1, beta2, eps, weight_decay): as torch.optim.Adam
  // (weight decay added to the gradient, not decoupled): g = grad + weight_decay * param;
  // m = beta1 m + (1 - beta1) g; v = beta2 v + (1 - beta2) g^2; with t = step[0] (i32, the
  // update's count from 1, written by the host), param -= lr / (1 - beta1^t) * m /
  // (sqrt(v) / sqrt(1 - beta2^t) + eps). param, m and v are updated in place.
  adam_update,
  // logits, target (floats of the logits' shape: a teacher's logits) -> loss [1]: the mean
  // squared error over every element (torch.nn.functional.mse_loss).
  mse_forward,
  mse_backward, // logits, target -> dlogits = 2 (logits - target) / elements
  // Split-K: x, w -> partial [S * N, O, OH, OW] (float, y's layout): slice s (images
  // s*N..s*N+N-1) holds conv2d.forward's sums over the range [split_k_begin(K, S, s),
  // split_k_begin(K, S, s + 1)) of the reduction k = (kh * KW + kw) * C + c alone, no bias or
  // epilogue (groups 1). partial.sum completes y. More blocks share a reduction whose output
  // is a few tiles (small images, wide channels).
  conv2d_forward_partial,
  // Split-K of linear.forward: x [N, F], w -> partial [S * N, K] (float), the ranges over f.
  linear_forward_partial,
  // x, w, [b] -> y = maxpool(relu?(conv(x, w) + b)), the pool's window, stride, padding and
  // ceil_mode in Step::pool: a conv whose output only a max pool reads, fused
  // (generator/rewrite/conv_pool.cpp) so that output never reaches memory.
  conv2d_pool_forward,
};

// The first k of range s of S over a reduction of K (s = S gives K): whole multiples of 16
// (a tensor core's k step), as evenly spread as they go.
constexpr int64_t split_k_begin(int64_t K, int64_t S, int64_t s) {
  return s >= S ? K : 16 * (s * ((K + 15) / 16) / S);
}

std::string_view fn_name(Fn f);
std::optional<Fn> parse_fn(std::string_view name);

// Argument roles: the inputs read and outputs written (`x*` means x0, x1, ...).
struct FnSignature {
  std::span<const std::string_view> reads;
  std::span<const std::string_view> writes;
  std::span<const std::string_view> optional; // subset of reads and writes that may be absent
  // Subset of writes that the step adds to (read-modify-write): they must hold a value
  // already, like every output of an accumulating step.
  std::span<const std::string_view> updates;
};
bool fn_reads(Fn f, std::string_view role);
bool fn_writes(Fn f, std::string_view role); // sgd.update's param counts as written
bool fn_updates(Fn f, std::string_view role);
FnSignature fn_signature(Fn f);

} // namespace kiln
