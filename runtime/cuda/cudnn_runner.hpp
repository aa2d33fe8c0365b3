// Library steps through cuDNN (its legacy API): convolutions forward (with the fused
// epilogue), backward data, backward filter and bias; pooling, activation, softmax,
// batchnorm, tensor add, copies and layout/type conversions. Convolution algorithms are
// chosen once per step with cudnnFind*AlgorithmEx; one workspace, sized for the largest
// need, is allocated at prepare time (never while a phase runs).
#pragma once

#include "runtime/cuda/backend.hpp"

#include <memory>

namespace kiln {

std::unique_ptr<LibraryRunner> make_cudnn_runner();

} // namespace kiln
