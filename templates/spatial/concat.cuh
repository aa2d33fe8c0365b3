// Channel-axis concatenation of [N, C_k, H, W] (NCHW or NHWC) or [N, C_k] inputs into
// [N, CO, ...], and its backward: dx = the channel slice [OFFSET, OFFSET + CI) of dy.
// Both copy a slice between a tensor of CI channels and one of CO channels at a channel
// offset, one thread per element of the slice tensor in its memory order (NCHW: runs of
// CI*S elements are contiguous in both; NHWC: runs of CI).
//
// Cfg: T, N, S (H*W; 1 for [N, C] tensors), NHWC (ignored when S = 1), CO (channels of y
//      or dy), THREADS;
//      forward: INPUTS (1..15: a kernel takes 16 arguments), C0..C14 (channels of each
//      input, 0 past INPUTS), OFFSET (the channel of y where x0 goes, the others after
//      it: 0 when the inputs fill y);
//      backward: CI (dx channels), OFFSET, ACCUMULATE.
// Arguments, in order: forward: x0..x{INPUTS-1}, y · backward: dy, dx.
// Grid: forward: any x, y = INPUTS (blockIdx.y selects the input; a grid-stride loop over
//      it); backward: any, 1-D (grid-stride loop).
#pragma once

#include "common/grid_stride.cuh"
#include "common/tensor4.cuh"

namespace kiln::spatial {

inline constexpr int kConcatMaxInputs = kMaxArgs - 1;

// Element i of a [N, CI, S] slice tensor, as an index into a [N, CO, S] tensor whose
// channels [OFFSET, OFFSET + CI) it is.
template <bool NHWC, int S, int CI, int CO, int OFFSET, class I> KILN_FN I slice_to_full(I i) {
  if (NHWC) return (i / CI) * CO + OFFSET + i % CI;
  return (i / (I(CI) * S)) * (I(CO) * S) + I(OFFSET) * S + i % (I(CI) * S);
}

// Channels of input k and the channel of y where it starts.
template <class Cfg> KILN_CONST int concat_channels(int k) {
  const int c[kConcatMaxInputs] = {Cfg::C0,  Cfg::C1,  Cfg::C2,  Cfg::C3,  Cfg::C4,
                                   Cfg::C5,  Cfg::C6,  Cfg::C7,  Cfg::C8,  Cfg::C9,
                                   Cfg::C10, Cfg::C11, Cfg::C12, Cfg::C13, Cfg::C14};
  return c[k];
}
template <class Cfg> KILN_CONST int concat_offset(int k) {
  int o = Cfg::OFFSET;
  for (int j = 0; j < k; ++j)
    o += concat_channels<Cfg>(j);
  return o;
}

template <class Cfg, int K> KILN_FN void concat_input(const KernelArgs& a) {
  if constexpr (K < Cfg::INPUTS) {
    using T = typename Cfg::T;
    constexpr int CI = concat_channels<Cfg>(K), OFFSET = concat_offset<Cfg>(K);
    static_assert(OFFSET + CI <= Cfg::CO, "the inputs fit y");
    using I = index_t<i64(Cfg::N) * Cfg::CO * Cfg::S>;
    constexpr I count = I(i64(Cfg::N) * CI * Cfg::S);
    const Global<const T> x = arg<const T>(a, K);
    const Global<T> y = arg<T>(a, Cfg::INPUTS);
    for (I i = grid_first<I, Cfg::THREADS>(); i < count; i += grid_step<I, Cfg::THREADS>())
      y[slice_to_full<Cfg::NHWC, Cfg::S, CI, Cfg::CO, OFFSET>(i)] = x[i];
  }
}

template <class Cfg> KILN_FN void concat_forward(const KernelArgs& a) {
  static_assert(Cfg::INPUTS >= 1 && Cfg::INPUTS <= kConcatMaxInputs, "1..15 inputs");
  switch (blockIdx.y) {
  case 0: concat_input<Cfg, 0>(a); break;
  case 1: concat_input<Cfg, 1>(a); break;
  case 2: concat_input<Cfg, 2>(a); break;
  case 3: concat_input<Cfg, 3>(a); break;
  case 4: concat_input<Cfg, 4>(a); break;
  case 5: concat_input<Cfg, 5>(a); break;
  case 6: concat_input<Cfg, 6>(a); break;
  case 7: concat_input<Cfg, 7>(a); break;
  case 8: concat_input<Cfg, 8>(a); break;
  case 9: concat_input<Cfg, 9>(a); break;
  case 10: concat_input<Cfg, 10>(a); break;
  case 11: concat_input<Cfg, 11>(a); break;
  case 12: concat_input<Cfg, 12>(a); break;
  case 13: concat_input<Cfg, 13>(a); break;
  case 14: concat_input<Cfg, 14>(a); break;
  default: break;
  }
}

template <class Cfg> KILN_FN void concat_backward(const KernelArgs& a) {
  using T = typename Cfg::T;
  using I = index_t<i64(Cfg::N) * Cfg::CO * Cfg::S>;
  constexpr I count = I(i64(Cfg::N) * Cfg::CI * Cfg::S);
  const Global<const T> dy = arg<const T>(a, 0);
  const Global<T> dx = arg<T>(a, 1);
  for (I i = grid_first<I, Cfg::THREADS>(); i < count; i += grid_step<I, Cfg::THREADS>())
    store_grad<Cfg::ACCUMULATE>(
        dx, i, to_float(dy[slice_to_full<Cfg::NHWC, Cfg::S, Cfg::CI, Cfg::CO, Cfg::OFFSET>(i)]));
}

} // namespace kiln::spatial
