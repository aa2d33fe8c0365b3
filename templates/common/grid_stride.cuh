// Grid-stride loops over the elements of a tensor (1-D blocks of THREADS threads, any grid),
// and the store at the end of a gradient's loop.
#pragma once

#include "common/kiln.cuh"

namespace kiln {

// The first index and the step of a grid-stride loop.
template <class I, int THREADS> KILN_FN I grid_first() {
  return I(blockIdx.x) * THREADS + I(threadIdx.x);
}
template <class I, int THREADS> KILN_FN I grid_step() { return I(gridDim.x) * THREADS; }

// Stores v into a gradient element, adding the element's old value first when ACCUMULATE.
template <bool ACCUMULATE, class T> KILN_FN void store_grad(Global<T> p, i64 i, float v) {
  if (ACCUMULATE) v += to_float(p[i]);
  p[i] = from_float<T>(v);
}

} // namespace kiln
