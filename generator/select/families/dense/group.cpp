// The dense group of template families (see families/groups.hpp): batchnorm (inference,
// training forward, backward), linear (tiled GEMM for all three products, a dot-product
// kernel for small forwards), softmax and softmax cross-entropy, layer norm, and the moves
// of whole channels (shuffle, slice).
#include "generator/select/families/dense/batchnorm.hpp"
#include "generator/select/families/dense/channel_move.hpp"
#include "generator/select/families/dense/layernorm.hpp"
#include "generator/select/families/dense/linear.hpp"
#include "generator/select/families/dense/reduce.hpp"
#include "generator/select/families/dense/softmax.hpp"
#include "generator/select/families/groups.hpp"

namespace kiln {

std::vector<const Family*> dense_families() {
  static const dense::BatchnormForwardFamily batchnorm_forward;
  static const dense::BatchnormTrainFamily batchnorm_train;
  static const dense::BatchnormChunksFamily batchnorm_chunks;
  static const dense::LinearGemmFamily linear_gemm;
  static const dense::LinearDotFamily linear_dot;
  static const dense::SoftmaxFamily softmax;
  static const dense::SoftmaxXentFamily softmax_xent;
  static const dense::LayernormFamily layernorm;
  static const dense::ChannelMoveFamily channel_move;
  static const dense::ReduceFamily reduce;
  return {&batchnorm_forward, &batchnorm_train, &batchnorm_chunks, &linear_gemm,  &linear_dot,
          &softmax,           &softmax_xent,    &layernorm,        &channel_move, &reduce};
}

} // namespace kiln
