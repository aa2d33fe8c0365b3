// Elementwise ops over flat tensors (layout-agnostic: every argument shares one layout).
//
// Cfg: T (element type), OP (below), COUNT (elements), INPUTS (add: 2..8),
//      ACCUMULATE (add the result to the output), LR (sgd, sgd_decay, adam: learning rate),
//      THREADS; sgd_decay: WD (weight decay), MOMENTUM (0: no velocity); adam: WD, BETA1,
//      BETA2, EPS.
// Arguments, in order: relu: x, y · relu_backward: y, dy, dx · hardswish: x, y ·
//      hardswish_backward: x, dy, dx · activation (ACT, [ACT_P0, ACT_P1]): x, y ·
//      activation_backward: x, dy, dx · mul (BCAST_HW, BCAST_C, NHWC): x0, x1, y ·
//      mul_backward: dy, x, dx · mul_reduce: x, dy, dx · add: x0..x{INPUTS-1}, y ·
//      copy: src, dst · sgd: param, grad (param updated in place) · fill_zero: dst ·
//      sgd_decay: param, grad, [velocity (float; with MOMENTUM)] · adam: param, grad, m, v
//      (float), step (int [1]: this update's count from 1, written by the host before the
//      launch, so one instance serves every step).
// The optimizers compute as runtime/step_fn.hpp says (torch.optim.SGD and Adam), in fp32;
// Adam's bias corrections 1 - beta^t are computed once per thread in double.
// VEC (optional, > 1): VEC consecutive elements a thread per step, each argument read or
//      written as one 16-byte pack (COUNT a multiple of VEC, every argument 16-byte aligned),
//      for the ops of elements in, one element out alone: RELU, RELU_BACKWARD, ACTIVATION(_
//      BACKWARD), MUL and MUL_BACKWARD without broadcast, ADD, COPY, FILL_ZERO, SGD. One 2-byte
//      element a thread ran resnet50's ReLU backward and residual adds on an H100 at 0.48 and
//      0.68 of its DRAM bandwidth (bench/results/h100_2026-11-27c).
// Grid: any; a grid-stride loop covers COUNT (VEC: COUNT / VEC packs).
#pragma once

#include "common/epilogue.cuh"

namespace kiln::elementwise {

enum Op {
  RELU = 0,
  RELU_BACKWARD = 1,
  ADD = 2,
  COPY = 3,
  SGD = 4,
  FILL_ZERO = 5,
  SGD_DECAY = 6,
  ADAM = 7,
  // 8, 9: hardswish's own ops before ACTIVATION took every activation
  ACTIVATION = 10,          // Cfg::ACT (and ACT_P0, ACT_P1) on x
  ACTIVATION_BACKWARD = 11, // dy times ACT's derivative at x
  MUL = 12,                 // x0 * x1, x1 broadcast over H, W when BCAST_HW > 1
  MUL_BACKWARD = 13,        // dy * x (x broadcast as MUL's x1)
  MUL_REDUCE = 14           // per (n, c) of COUNT = N * C: the sum over H, W of dy * x
};

// The element of a broadcast [N, C, 1, 1] operand for element i of its [N, C, H, W] partner:
// BCAST_HW = H * W (1: no broadcast), BCAST_C = C, NHWC the layout they share.
template <class Cfg> KILN_FN i64 broadcast_index(i64 i) {
  if constexpr (Cfg::BCAST_HW == 1)
    return i;
  else if constexpr (Cfg::NHWC)
    return i / (Cfg::BCAST_HW * Cfg::BCAST_C) * Cfg::BCAST_C + i % Cfg::BCAST_C;
  else
    return i / Cfg::BCAST_HW;
}

// SGD with weight decay and momentum, and Adam: parameters of T, optimizer state in float.
template <class Cfg> KILN_FN void optimizer_update(const KernelArgs& a) {
  using T = typename Cfg::T;
  const i64 stride = i64(gridDim.x) * Cfg::THREADS;
  const Global<T> param = arg<T>(a, 0);
  const Global<const T> grad = arg<const T>(a, 1);
  if constexpr (Cfg::OP == SGD_DECAY) {
    for (i64 i = i64(blockIdx.x) * Cfg::THREADS + threadIdx.x; i < Cfg::COUNT; i += stride) {
      const float p = to_float(param[i]);
      float g = to_float(grad[i]) + Cfg::WD * p;
      if constexpr (Cfg::MOMENTUM != 0.f) {
        const Global<float> velocity = arg<float>(a, 2);
        g = Cfg::MOMENTUM * velocity[i] + g;
        velocity[i] = g;
      }
      param[i] = from_float<T>(p - Cfg::LR * g);
    }
  } else {
    const Global<float> m = arg<float>(a, 2), v = arg<float>(a, 3);
    const int t = arg<const int>(a, 4)[0];
    const double bc1 = 1.0 - pow(double(Cfg::BETA1), double(t));
    const double bc2 = 1.0 - pow(double(Cfg::BETA2), double(t));
    const float step = float(double(Cfg::LR) / bc1), inv_root2 = float(1.0 / sqrt(bc2));
    for (i64 i = i64(blockIdx.x) * Cfg::THREADS + threadIdx.x; i < Cfg::COUNT; i += stride) {
      const float p = to_float(param[i]);
      const float g = to_float(grad[i]) + Cfg::WD * p;
      const float mi = Cfg::BETA1 * m[i] + (1.f - Cfg::BETA1) * g;
      const float vi = Cfg::BETA2 * v[i] + (1.f - Cfg::BETA2) * g * g;
      m[i] = mi;
      v[i] = vi;
      param[i] = from_float<T>(p - step * mi / (sqrtf(vi) * inv_root2 + Cfg::EPS));
    }
  }
}

// VEC: absent, 1.
template <class Cfg, class = void> struct vec_of { static constexpr int value = 1; };
template <class Cfg> struct vec_of<Cfg, decltype(void(Cfg::VEC))> {
  static constexpr int value = Cfg::VEC;
};

// The VEC form (above): the same arithmetic per element as the one-element form below.
template <class Cfg> KILN_FN void elementwise_packed(const KernelArgs& a) {
  using T = typename Cfg::T;
  constexpr int V = Cfg::VEC;
  using P = Pack<T, V>;
  constexpr int OP = Cfg::OP;
  static_assert(OP == RELU || OP == RELU_BACKWARD || OP == ACTIVATION ||
                    OP == ACTIVATION_BACKWARD || OP == MUL || OP == MUL_BACKWARD || OP == ADD ||
                    OP == COPY || OP == FILL_ZERO || OP == SGD,
                "VEC: an op of elements in, one element out");
  static_assert(Cfg::COUNT % V == 0 && sizeof(P) == 16, "VEC: whole 16-byte packs");
  constexpr int IN = OP == FILL_ZERO                                ? 0
                     : OP == ADD                                    ? Cfg::INPUTS
                     : OP == RELU || OP == ACTIVATION || OP == COPY ? 1
                                                                    : 2;
  if constexpr (OP == MUL || OP == MUL_BACKWARD) static_assert(Cfg::BCAST_HW == 1, "no broadcast");
  const i64 stride = i64(gridDim.x) * Cfg::THREADS;
  // SGD updates its first argument in place.
  const Global<P> y = view_as<P>(arg<T>(a, OP == SGD ? 0 : IN));
  for (i64 i = i64(blockIdx.x) * Cfg::THREADS + threadIdx.x; i < Cfg::COUNT / V; i += stride) {
    P in[IN > 0 ? IN : 1];
    for (int k = 0; k < IN; ++k)
      in[k] = view_as<const P>(arg<const T>(a, k))[i];
    P old;
    constexpr bool ACC = Cfg::ACCUMULATE && OP != SGD;
    if constexpr (ACC) old = y[i];
    P out;
    for (int e = 0; e < V; ++e) {
      float v = 0;
      if constexpr (OP == RELU) {
        v = activate<Act::relu>(to_float(in[0].e[e]));
      } else if constexpr (OP == RELU_BACKWARD) {
        v = to_float(in[0].e[e]) > 0.f ? to_float(in[1].e[e]) : 0.f;
      } else if constexpr (OP == ACTIVATION) {
        v = activate<Cfg::ACT, act_params_of<Cfg>>(to_float(in[0].e[e]));
      } else if constexpr (OP == ACTIVATION_BACKWARD) {
        using Q = act_params_of<Cfg>;
        v = to_float(in[1].e[e]) * Activation<Cfg::ACT>::grad(to_float(in[0].e[e]), Q::p0, Q::p1);
      } else if constexpr (OP == MUL || OP == MUL_BACKWARD) {
        v = to_float(in[0].e[e]) * to_float(in[1].e[e]);
      } else if constexpr (OP == ADD) {
        for (int k = 0; k < IN; ++k)
          v += to_float(in[k].e[e]);
      } else if constexpr (OP == COPY) {
        v = to_float(in[0].e[e]);
      } else if constexpr (OP == SGD) {
        v = to_float(in[0].e[e]) - Cfg::LR * to_float(in[1].e[e]);
      }
      if constexpr (ACC) v += to_float(old.e[e]);
      out.e[e] = from_float<T>(v);
    }
    y[i] = out;
  }
}

template <class Cfg> KILN_FN void elementwise(const KernelArgs& a) {
  using T = typename Cfg::T;
  if constexpr (vec_of<Cfg>::value > 1) {
    elementwise_packed<Cfg>(a);
  } else if constexpr (Cfg::OP == SGD_DECAY || Cfg::OP == ADAM) {
    optimizer_update<Cfg>(a);
  } else {
    const i64 stride = i64(gridDim.x) * Cfg::THREADS;
    for (i64 i = i64(blockIdx.x) * Cfg::THREADS + threadIdx.x; i < Cfg::COUNT; i += stride) {
      float v = 0;
      int out = 1;
      if constexpr (Cfg::OP == RELU) {
        v = activate<Act::relu>(to_float(arg<const T>(a, 0)[i]));
      } else if constexpr (Cfg::OP == RELU_BACKWARD) {
        const float y = to_float(arg<const T>(a, 0)[i]);
        v = y > 0.f ? to_float(arg<const T>(a, 1)[i]) : 0.f;
        out = 2;
      } else if constexpr (Cfg::OP == ACTIVATION) {
        v = activate<Cfg::ACT, act_params_of<Cfg>>(to_float(arg<const T>(a, 0)[i]));
      } else if constexpr (Cfg::OP == ACTIVATION_BACKWARD) {
        using P = act_params_of<Cfg>;
        const float x = to_float(arg<const T>(a, 0)[i]);
        v = to_float(arg<const T>(a, 1)[i]) * Activation<Cfg::ACT>::grad(x, P::p0, P::p1);
        out = 2;
      } else if constexpr (Cfg::OP == MUL || Cfg::OP == MUL_BACKWARD) {
        v = to_float(arg<const T>(a, 0)[i]) * to_float(arg<const T>(a, 1)[broadcast_index<Cfg>(i)]);
        out = 2;
      } else if constexpr (Cfg::OP == MUL_REDUCE) {
        const Global<const T> x = arg<const T>(a, 0), dy = arg<const T>(a, 1);
        const i64 n = i / Cfg::BCAST_C, c = i % Cfg::BCAST_C;
        for (i64 k = 0; k < Cfg::BCAST_HW; ++k) { // in order: deterministic
          const i64 at =
              Cfg::NHWC ? (n * Cfg::BCAST_HW + k) * Cfg::BCAST_C + c : i * Cfg::BCAST_HW + k;
          v += to_float(dy[at]) * to_float(x[at]);
        }
        out = 2;
      } else if constexpr (Cfg::OP == ADD) {
        for (int k = 0; k < Cfg::INPUTS; ++k)
          v += to_float(arg<const T>(a, k)[i]);
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
}

} // namespace kiln::elementwise
