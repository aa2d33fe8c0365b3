// The functions a plan step computes: each op's forward and backward pieces, the loss,
// the update and plain copies. Every backend implements the ones it supports; the cpu
// backend implements all of them with the reference ops.
#pragma once

#include <optional>
#include <span>
#include <string_view>

namespace kiln {

enum class Fn {
  conv2d_forward,          // x, w, [b], [residual] -> y (relu flag: fused epilogue)
  conv2d_fold_bn,          // w, [b], weight, bias, running_mean, running_var -> w_out, b_out
  conv2d_backward_data,    // dy, w -> dx
  conv2d_backward_weight,  // x, dy -> dw
  linear_forward,          // x, w, [b] -> y (relu flag)
  linear_backward_data,    // dy, w -> dx
  linear_backward_weight,  // x, dy -> dw
  bias_backward,           // dy -> db (conv2d or linear)
  batchnorm_forward,       // x, weight, bias, running_mean, running_var -> y (inference; relu flag)
  batchnorm_forward_train, // x, weight, bias -> y, [mean, invstd] (batch statistics)
  // x, dy, weight, [mean, invstd] -> dx, dweight, dbias; without the saved statistics they
  // are recomputed from x exactly as the forward computes them (kiln's plans do this: it
  // keeps nothing but x alive for the backward).
  batchnorm_backward,
  relu_forward,                // x -> y
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
  sgd_update,  // param, grad (lr)
};

std::string_view fn_name(Fn f);
std::optional<Fn> parse_fn(std::string_view name);

// Argument roles: the inputs read and outputs written (`x*` means x0, x1, ...).
struct FnSignature {
  std::span<const std::string_view> reads;
  std::span<const std::string_view> writes;
  std::span<const std::string_view> optional; // subset of reads that may be absent
};
FnSignature fn_signature(Fn f);

} // namespace kiln
