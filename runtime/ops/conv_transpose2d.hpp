// conv_transpose2d as the convolution it transposes: the generator lowers its forward to
// that conv's data gradient and its backward to that conv's forward (data) and weight
// gradient, so both share conv2d's machinery (runtime/ops/conv_transpose2d.cpp).
#pragma once

#include "runtime/op.hpp"

namespace kiln {

// The conv2d whose backward_data a conv_transpose2d with input channels `in_channels` is:
// out_channels = in_channels (its weight [in, out / groups, kh, kw] is that conv's), the
// same kernel, stride, padding, dilation and groups, no bias. Its forward maps the transposed
// conv's output shape back to the input shape (output_padding < stride adds rows that no
// window of the conv reaches).
Attrs transposed_conv(const Attrs& a, int64_t in_channels);

} // namespace kiln
