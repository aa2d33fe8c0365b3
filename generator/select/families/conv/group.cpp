// The conv group of template families (see families/groups.hpp).
#include "generator/select/families/conv/conv_families.hpp"
#include "generator/select/families/groups.hpp"

namespace kiln {

std::vector<const Family*> conv_families() {
  static const ConvDirectFamily direct;
  static const ConvDepthwiseFamily depthwise;
  static const ConvFoldBnFamily fold_bn;
  static const ConvFlipWeightFamily flip_weight;
  static const ConvBackwardDataFamily backward_data;
  static const ConvBackwardWeightFamily backward_weight;
  static const ConvBackwardWeightMmaFamily backward_weight_mma;
  static const BiasBackwardFamily bias_backward;
  return {&direct,          &depthwise,           &fold_bn,      &flip_weight, &backward_data,
          &backward_weight, &backward_weight_mma, &bias_backward};
}

} // namespace kiln
