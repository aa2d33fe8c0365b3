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

// FLOPs of one layer as FoldedCNNs reports them: its flop_count.py prints
// int(2 * thop.profile(model)[0]), twice the multiply-accumulates that thop counts for the
// torch.nn module the layer stands for. The rules are those of thop 0.0.31.post2005241907,
// with which FoldedCNNs' NoScope counts agree exactly:
//   conv2d              output elements * (in_channels / groups * kh * kw + 1 if bias)
//   linear              output elements * in_features (the bias is not counted)
//   batchnorm           2 * elements (eval mode)
//   avgpool2d           output elements
//   adaptive_avgpool2d, global_avgpool (nn.AdaptiveAvgPool2d)
//                       output elements * (H / out_h * W / out_w + 1), integer divisions
//   softmax             (3 * C - 1) per softmax over C channels (nn.Softmax)
//   conv_transpose2d    2 * MACs (+ output elements with a bias)
//   relu, maxpool2d, flatten, resize  0 (thop's zero_ops for nearest; kiln counts 0 for linear too)
//   add, concat, fold, unfold, pad 0 (tensor operations and views: no module to hook)
// For a folded model it is the count for one folded input, i.e. for `factor` images.
// FoldedCNNs' game-scraping counts (config/model_map.json) exceed this by 2 * the MACs of
// their final nn.Linear: an older thop counted in + (in - 1) + 1 operations per output
// element of a linear layer with a bias.
int64_t thop_flops(const Model& m, int node);
int64_t total_thop_flops(const Model& m);

} // namespace kiln
