// Compaction of a sparse activation into the form the sparse convolutions read
// (runtime/sparse_form.hpp): per pixel and slice of CS channels, the nonzeros in ascending
// channel order with their one-byte channel index, and their count; the tensor's nonzeros
// are added to a device-side total (`nnz`) that a guarded convolution reads to choose its
// path. As a producer's kernel it also computes the value it compacts and writes it dense:
// relu(x), or batchnorm (inference) with an optional relu, so the compaction costs no extra
// pass over the tensor.
//
// A block takes (tile of TP pixels, slice) jobs in turn. It stages the job's TP x CS values
// in shared memory (reads and dense writes coalesced in either layout), then its warps
// compact them (conv/compact_staged.cuh: ballots, nonzeros in channel order, each output
// written by one thread). The count total is an integer (exact in any order): one atomic
// add per block.
//
// Cfg: T (float, f16, bf16), N, C, H, W (x), NHWC (layout of x and y; false: NCHW),
//      CS (slice: 1, 2, 4, 8, 16 or 32, or a multiple of 32 up to 224),
//      PRE (COMPACT_NONE: compact x as it is; COMPACT_RELU: y = relu(x); COMPACT_BATCHNORM:
//      y = act(x * scale + shift), batchnorm's scale and shift in the fused epilogue of
//      common/epilogue.cuh), RELU or ACT (its activation), EPS,
//      COUNT (add the nonzeros to nnz), TP (pixels per job, a multiple of 32 / min(CS, 32)),
//      THREADS (a multiple of 32).
// Arguments, in order: x, [weight, bias, running_mean, running_var] (COMPACT_BATCHNORM),
//      [y] (not COMPACT_NONE), values, index, count, [nnz] (COUNT).
// Grid: any (a grid-stride loop over the jobs). Block: THREADS x 1 x 1.
#pragma once

#include "common/epilogue.cuh"
#include "common/tensor4.cuh"
#include "conv/compact_staged.cuh"

namespace kiln::conv {

enum CompactPre { COMPACT_NONE = 0, COMPACT_RELU = 1, COMPACT_BATCHNORM = 2 };

template <class Cfg> KILN_FN void sparse_compact(const KernelArgs& a) {
  using T = typename Cfg::T;
  constexpr int C = Cfg::C, CS = Cfg::CS, SL = ceil_div(C, CS), TP = Cfg::TP;
  constexpr int THREADS = Cfg::THREADS, WARPS = THREADS / 32, PITCH = CS + 1;
  constexpr int UPW = 32 / (CS < 32 ? CS : 32); // units a warp compacts at once
  constexpr bool BN = Cfg::PRE == COMPACT_BATCHNORM, DENSE_OUT = Cfg::PRE != COMPACT_NONE;
  using E = Epilogue<T, false, false, Cfg::PRE == COMPACT_RELU ? Act::relu : act_of<Cfg>::value,
                     act_params_of<Cfg>>;
  static_assert(THREADS % 32 == 0 && TP % UPW == 0, "whole warps; whole units per warp step");
  constexpr i64 HW = i64(Cfg::H) * Cfg::W, P = i64(Cfg::N) * HW;
  constexpr i64 JOBS = ceil_div64(P, TP) * SL;
  using I = index_t<P * SL * CS + P * C>;

  constexpr int kY = BN ? 5 : 1, kV = kY + (DENSE_OUT ? 1 : 0);
  const Global<const T> x = arg<const T>(a, 0);
  const Global<T> values = arg<T>(a, kV);
  const Global<u8> index = arg<u8>(a, kV + 1), count = arg<u8>(a, kV + 2);

  KILN_SHARED_ARRAY(float, xs, TP* PITCH);       // [pixel][channel of the slice]
  KILN_SHARED_ARRAY(float, bn, BN ? 2 * CS : 1); // scale, shift of the slice's channels
  KILN_SHARED_ARRAY(int, warp_nnz, WARPS);

  const int t = int(threadIdx.x);
  int counted = 0;

  for (i64 job = blockIdx.x; job < JOBS; job += gridDim.x) {
    const int s = int(job % SL);
    const i64 p0 = (job / SL) * TP;
    const int width = min_of(CS, C - s * CS); // the last slice may be narrower
    if constexpr (BN) {
      for (int i = t; i < CS; i += THREADS) {
        ScaleShift ss{0.f, 0.f};
        if (i < width)
          ss = batchnorm_scale_shift(arg<const T>(a, 1), arg<const T>(a, 2), arg<const T>(a, 3),
                                     arg<const T>(a, 4), Cfg::EPS, s * CS + i);
        bn[i] = ss.scale;
        bn[CS + i] = ss.shift;
      }
      sync_threads();
    }
    // Stage the job's values (computing and writing the producer's output on the way).
#pragma unroll 2
    for (int e = t; e < TP * CS; e += THREADS) {
      const int p = Cfg::NHWC ? e / CS : e % TP, i = Cfg::NHWC ? e % CS : e / TP;
      const i64 pg = p0 + p;
      float v = 0.f;
      if (pg < P && i < width) {
        const int c = s * CS + i;
        const I at = Cfg::NHWC ? I(pg) * C + c : (I(pg / HW) * C + c) * I(HW) + I(pg % HW);
        v = to_float(x[at]);
        if constexpr (BN)
          v = E::apply(v, ScaleShift{bn[i], bn[CS + i]}, 0.f, 0.f);
        else
          v = E::apply(v, 0.f, 0.f);
        if constexpr (DENSE_OUT) {
          const T r = from_float<T>(v);
          arg<T>(a, kY)[at] = r;
          v = to_float(r); // compact what was stored
        }
      }
      xs[p * PITCH + i] = v;
    }
    sync_threads();
    counted += compact_staged<CS, TP, 1, PITCH, THREADS>(
        xs, [&](int r, int) { return p0 + r < P ? i64(p0 + r) * SL + s : i64(-1); }, values, index,
        count);
    sync_threads(); // xs is restaged by the next job
  }
  if constexpr (Cfg::COUNT) add_block_count<THREADS>(counted, warp_nnz, arg<int>(a, kV + 3));
}

} // namespace kiln::conv
