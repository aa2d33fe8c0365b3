// The pointwise activations with runtime/activation.cpp's functions (clip, hardsigmoid,
// sigmoid, silu, gelu, gelu_tanh): alike in every rule, so one file. Each gradient reads the
// forward's input; each tiles where its input is 4-D. (hardswish, older, keeps its own file.)
#include "generator/lower/ops/shared_rules.hpp"

namespace kiln::lowering {

extern const OpLowering clip_lowering{
    .op = OpKind::clip,
    .forward = Fn::clip_forward,
    .train_forward = Fn::clip_forward,
    .input_grad_reads_input = true,
    .input_grad = activation_grad<Fn::clip_backward>,
    .tileable = elementwise_tileable,
};

extern const OpLowering hardsigmoid_lowering{
    .op = OpKind::hardsigmoid,
    .forward = Fn::hardsigmoid_forward,
    .train_forward = Fn::hardsigmoid_forward,
    .input_grad_reads_input = true,
    .input_grad = activation_grad<Fn::hardsigmoid_backward>,
    .tileable = elementwise_tileable,
};

extern const OpLowering sigmoid_lowering{
    .op = OpKind::sigmoid,
    .forward = Fn::sigmoid_forward,
    .train_forward = Fn::sigmoid_forward,
    .input_grad_reads_input = true,
    .input_grad = activation_grad<Fn::sigmoid_backward>,
    .tileable = elementwise_tileable,
};

extern const OpLowering silu_lowering{
    .op = OpKind::silu,
    .forward = Fn::silu_forward,
    .train_forward = Fn::silu_forward,
    .input_grad_reads_input = true,
    .input_grad = activation_grad<Fn::silu_backward>,
    .tileable = elementwise_tileable,
};

extern const OpLowering gelu_lowering{
    .op = OpKind::gelu,
    .forward = Fn::gelu_forward,
    .train_forward = Fn::gelu_forward,
    .input_grad_reads_input = true,
    .input_grad = activation_grad<Fn::gelu_backward>,
    .tileable = elementwise_tileable,
};

extern const OpLowering gelu_tanh_lowering{
    .op = OpKind::gelu_tanh,
    .forward = Fn::gelu_tanh_forward,
    .train_forward = Fn::gelu_tanh_forward,
    .input_grad_reads_input = true,
    .input_grad = activation_grad<Fn::gelu_tanh_backward>,
    .tileable = elementwise_tileable,
};

} // namespace kiln::lowering
