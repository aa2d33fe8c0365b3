// Elementwise ops over flat tensors (layout-agnostic: every argument shares one layout).
//
// Cfg: T (element type), OP (below), COUNT (elements), INPUTS (add: 2..8),
//      ACCUMULATE (add the result to the output), LR (sgd: learning rate), THREADS.
// Arguments, in order: relu: x, y · relu_backward: y, dy, dx · add: x0..x{INPUTS-1}, y ·
//      copy: src, dst · sgd: param, grad (param updated in place) · fill_zero: dst.
// Grid: any; a grid-stride loop covers COUNT.
#pragma once

#include "common/kiln.cuh"

namespace kiln::elementwise {

enum Op { RELU = 0, RELU_BACKWARD = 1, ADD = 2, COPY = 3, SGD = 4, FILL_ZERO = 5 };

template <class Cfg> KILN_FN void elementwise(const KernelArgs& a) {
  using T = typename Cfg::T;
  const i64 stride = i64(gridDim.x) * Cfg::THREADS;
  for (i64 i = i64(blockIdx.x) * Cfg::THREADS + threadIdx.x; i < Cfg::COUNT; i += stride) {
    float v = 0;
    int out = 1;
    if constexpr (Cfg::OP == RELU) {
      const float x = to_float(arg<const T>(a, 0)[i]);
      v = x > 0.f ? x : 0.f;
    } else if constexpr (Cfg::OP == RELU_BACKWARD) {
      const float y = to_float(arg<const T>(a, 0)[i]);
      v = y > 0.f ? to_float(arg<const T>(a, 1)[i]) : 0.f;
      out = 2;
    } else if constexpr (Cfg::OP == ADD) {
      for (int k = 0; k < Cfg::INPUTS; ++k) v += to_float(arg<const T>(a, k)[i]);
      out = Cfg::INPUTS;
    } else if constexpr (Cfg::OP == COPY) {
      v = to_float(arg<const T>(a, 0)[i]);
    } else if constexpr (Cfg::OP == FILL_ZERO) {
      out = 0;
    } else if constexpr (Cfg::OP == SGD) {
      const Global<T> p = arg<T>(a, 0);
      p[i] = from_float<T>(to_float(p[i]) - Cfg::LR * to_float(arg<const T>(a, 1)[i]));
      continue;
    }
    const Global<T> y = arg<T>(a, out);
    if constexpr (Cfg::ACCUMULATE) v += to_float(y[i]);
    y[i] = from_float<T>(v);
  }
}

} // namespace kiln::elementwise
