// Moves whole channels of [N, C, *spatial] between two tensors of one layout, one thread per
// output element (grid-stride, in the output's memory order, so stores coalesce):
//   SHUFFLE: out channel j = in channel (j % G) * (C / G) + j / G (ShuffleNet's shuffle; its
//     gradient is the same kernel with C / G groups);
//   SLICE:   out channel j = in channel j + BEGIN (channel_slice.forward);
//   PLACE:   out channel j = in channel j - BEGIN where that is one, else 0
//     (channel_slice.backward; with ACCUMULATE only those channels are added to, the others
//     are left as they are).
//
// Cfg: T, N, IN_C, OUT_C, S (spatial size; 1 for [N, C]), CHANNELS_LAST (channel c of
//      position (n, s) at (n*S + s)*C + c: nhwc and [N, C]; otherwise (n*C + c)*S + s),
//      MODE (ChannelMove), G, BEGIN, ACCUMULATE, THREADS.
// Arguments: in, out. Grid: any (grid-stride loop).
#pragma once

#include "common/grid_stride.cuh"
#include "common/tensor4.cuh"

namespace kiln::elementwise {

enum class ChannelMove { shuffle, slice, place };

template <class Cfg> KILN_FN void channel_move(const KernelArgs& a) {
  using T = typename Cfg::T;
  const Global<const T> in = arg<const T>(a, 0);
  const Global<T> out = arg<T>(a, 1);
  constexpr i64 count = i64(Cfg::N) * Cfg::OUT_C * Cfg::S;
  for (i64 e = grid_first<i64, Cfg::THREADS>(); e < count; e += grid_step<i64, Cfg::THREADS>()) {
    i64 n, s;
    int c;
    if constexpr (Cfg::CHANNELS_LAST) {
      c = int(e % Cfg::OUT_C);
      const i64 p = e / Cfg::OUT_C;
      s = p % Cfg::S;
      n = p / Cfg::S;
    } else {
      s = e % Cfg::S;
      const i64 r = e / Cfg::S;
      c = int(r % Cfg::OUT_C);
      n = r / Cfg::OUT_C;
    }
    int src;
    if constexpr (Cfg::MODE == ChannelMove::shuffle)
      src = (c % Cfg::G) * (Cfg::IN_C / Cfg::G) + c / Cfg::G;
    else if constexpr (Cfg::MODE == ChannelMove::slice)
      src = c + Cfg::BEGIN;
    else
      src = c - Cfg::BEGIN < 0 || c - Cfg::BEGIN >= Cfg::IN_C ? -1 : c - Cfg::BEGIN;
    if (src < 0 && Cfg::ACCUMULATE) continue; // nothing to add
    float v = 0.f;
    if (src >= 0)
      v = to_float(in[Cfg::CHANNELS_LAST ? (n * Cfg::S + s) * Cfg::IN_C + src
                                         : (n * Cfg::IN_C + src) * Cfg::S + s]);
    store_grad<Cfg::ACCUMULATE>(out, e, v);
  }
}

} // namespace kiln::elementwise
