// A single layer given on the command line instead of a model (kiln bench, kiln tune):
//
//   conv:c=128,h=28,w=28,k=128,r=3[,n=1][,s=1][,p=0][,d=1][,g=1][,bias=0][,relu=0]
//   linear:c=2048,k=1000[,n=1][,bias=1][,relu=0]
//   pool:c=64,h=112,w=112,r=3[,n=1][,s=r][,p=0][,mode=max|avg]
//
// n batch, c input channels (linear: input features), h x w input image, k output channels
// (linear: output features), r kernel, s stride, p padding, d dilation, g groups; r, s, p
// and d take one number or HxW (3x1). bias and relu are 0 or 1 (relu: a fused ReLU after
// the layer). Keys appear at most once; unknown keys, missing required keys and values out
// of range are errors. The dtype and batch come from --dtype and --batch as for models.
#pragma once

#include "generator/model/model.hpp"

#include <string>

namespace kiln {

// Whether `arg` is a layer spec rather than a model path or name: "<op>:" with a known op.
bool is_layer_spec(const std::string& arg);

// The one-layer model the spec describes (input "x", layer "conv", "linear" or "pool").
Model layer_spec_model(const std::string& spec);

} // namespace kiln
