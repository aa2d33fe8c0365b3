// What every pooling kernel (pool2d.cuh, pool2d_backward.cuh, adaptive_avgpool2d.cuh) works
// on: x (or dx) [N, C, H, W] and y (or dy) [N, C, OH, OW] in one layout (NHWC or NCHW), with
// one index type wide enough for both.
#pragma once

#include "common/grid_stride.cuh"
#include "common/tensor4.cuh"
#include "pool/window.cuh"

namespace kiln::pool {

// (A y written through a pitch, Y_PITCH, spans N runs of Y_PITCH in NCHW, N * OH * OW in NHWC.)
template <class Cfg>
using pool_index_t =
    index_t<max_of(i64(Cfg::N) * Cfg::C * max_of(Cfg::H * Cfg::W, Cfg::OH* Cfg::OW),
                   i64(y_pitch_of<Cfg, 0>::value) * Cfg::N * (Cfg::NHWC ? Cfg::OH * Cfg::OW : 1))>;
template <class Cfg>
using PoolX = Tensor4<Cfg::NHWC, Cfg::N, Cfg::C, Cfg::H, Cfg::W, pool_index_t<Cfg>>;
template <class Cfg>
using PoolY = Tensor4<Cfg::NHWC, Cfg::N, Cfg::C, Cfg::OH, Cfg::OW, pool_index_t<Cfg>>;

} // namespace kiln::pool
