// The ranges seeded weights are drawn from: He-uniform convolution and linear weights
// (variance 2/fan_in keeps activations on scale through ReLUs), PyTorch's bias range, and
// batchnorm state near the identity. A batchnorm that ends a residual branch (its output
// feeds an `add`) gets a small scale, as torchvision's zero_init_residual does, so that
// networks hundreds of blocks deep (resnet1202) stay in range with random weights.
#pragma once

#include "generator/model/model.hpp"

#include <utility>

namespace kiln {

std::pair<double, double> param_init_range(const Model& m, int node, const ParamSpec& p);

} // namespace kiln
