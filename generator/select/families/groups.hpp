// Groups of template families, one folder each (families/<group>/), registered by
// all_families(). A group returns pointers to objects of static storage duration.
#pragma once

#include "generator/select/family.hpp"

#include <vector>

namespace kiln {

std::vector<const Family*> implicit_gemm_families(); // families/igemm: conv2d on tensor cores (NHWC)
std::vector<const Family*> conv_families();          // families/conv: direct conv, its backward, fold_bn, bias backward
std::vector<const Family*> spatial_families();       // families/spatial: pooling, upsample, concat
std::vector<const Family*> dense_families();         // families/dense: batchnorm, linear, softmax, cross-entropy
std::vector<const Family*> hopper_families(); // families/hopper: conv2d on sm_90a (TMA + wgmma)
std::vector<const Family*> sparse_families();        // families/sparse: compaction, sparse conv and its weight gradient

} // namespace kiln
