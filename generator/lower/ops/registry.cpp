// The generator's rules of every op (op_lowering.hpp): one line per op.
#include "generator/lower/op_lowering.hpp"
#include "runtime/error.hpp"

#include <array>

namespace kiln {

namespace lowering {
extern const OpLowering conv2d_lowering, linear_lowering, batchnorm_lowering, relu_lowering,
    maxpool2d_lowering, avgpool2d_lowering, adaptive_avgpool2d_lowering, global_avgpool_lowering,
    add_lowering, concat_lowering, flatten_lowering, resize_lowering, softmax_lowering,
    fold_lowering, unfold_lowering, hardswish_lowering, clip_lowering, hardsigmoid_lowering,
    sigmoid_lowering, silu_lowering, gelu_lowering, gelu_tanh_lowering, mul_lowering,
    layernorm_lowering, channel_shuffle_lowering, channel_slice_lowering, conv_transpose2d_lowering,
    pad_lowering, reduce_sum_lowering, reduce_mean_lowering, reduce_max_lowering,
    layernorm_invstd_lowering, space_to_depth_lowering;
} // namespace lowering

namespace {

const std::array kRules{
    &lowering::conv2d_lowering,
    &lowering::linear_lowering,
    &lowering::batchnorm_lowering,
    &lowering::relu_lowering,
    &lowering::maxpool2d_lowering,
    &lowering::avgpool2d_lowering,
    &lowering::adaptive_avgpool2d_lowering,
    &lowering::global_avgpool_lowering,
    &lowering::add_lowering,
    &lowering::concat_lowering,
    &lowering::flatten_lowering,
    &lowering::resize_lowering,
    &lowering::softmax_lowering,
    &lowering::fold_lowering,
    &lowering::unfold_lowering,
    &lowering::hardswish_lowering,
    &lowering::clip_lowering,
    &lowering::hardsigmoid_lowering,
    &lowering::sigmoid_lowering,
    &lowering::silu_lowering,
    &lowering::gelu_lowering,
    &lowering::gelu_tanh_lowering,
    &lowering::mul_lowering,
    &lowering::layernorm_lowering,
    &lowering::channel_shuffle_lowering,
    &lowering::channel_slice_lowering,
    &lowering::conv_transpose2d_lowering,
    &lowering::pad_lowering,
    &lowering::reduce_sum_lowering,
    &lowering::reduce_mean_lowering,
    &lowering::reduce_max_lowering,
    &lowering::layernorm_invstd_lowering,
    &lowering::space_to_depth_lowering,
};

} // namespace

const OpLowering& op_lowering(OpKind op) {
  for (const OpLowering* r : kRules)
    if (r->op == op) return *r;
  throw Error("", "", cat("no lowering rules for op ", op_name(op)));
}

} // namespace kiln
