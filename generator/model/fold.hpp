// FoldedCNNs (Kosaian et al., ICML 2021): f images stacked along channels. The folded
// model starts with a `fold` view ([N, C, H, W] -> [N/f, f*C, H, W]), widens every hidden
// conv2d/linear to int(w * sqrt(f)) (or int(w * multiplier)), gives the last layer f*K
// outputs and follows it with an `unfold` view ([N/f, f*K] -> [N, K]). It needs retrained
// weights; kiln runs whatever weights it is given.
#pragma once

#include "generator/model/model.hpp"

#include <optional>

namespace kiln {

struct FoldOptions {
  int64_t factor = 2;
  std::optional<double> multiplier; // hidden width multiplier; default sqrt(factor)
};

// The folded model. The batch is rounded up to a multiple of the factor.
Model fold_model(const Model& m, const FoldOptions& o);

// The conv2d or linear layer that produces the model's first output (through param-free
// layers such as relu, softmax or flatten), or -1.
int last_param_layer(const Model& m);

} // namespace kiln
