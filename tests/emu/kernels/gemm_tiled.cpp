// Test kernels: a 16x16-tiled fp32 GEMM through shared memory, C[M,N] = A[M,K] B[K,N]
// (row-major; dims = {M, N, K}; block (16,16), grid (ceil(N/16), ceil(M/16))), and the
// same kernel with the planted bugs the checks must catch.
#include "common/kiln.cuh"

using namespace kiln;

enum Bug { kNone, kNoSyncAfterLoad, kNoSyncAfterCompute, kOffByOneTileBound };

template <Bug kBug> KILN_FN void gemm_tiled(const KernelArgs& args) {
  constexpr int T = 16;
  const auto A = arg<const float>(args, 0);
  const auto B = arg<const float>(args, 1);
  const auto C = arg<float>(args, 2);
  const auto dims = arg<const int>(args, 3);
  const int M = dims[0], N = dims[1], K = dims[2];
  KILN_SHARED_ARRAY(float, As, T* T);
  KILN_SHARED_ARRAY(float, Bs, T* T);
  const int tx = int(threadIdx.x), ty = int(threadIdx.y);
  const int row = int(blockIdx.y) * T + ty, col = int(blockIdx.x) * T + tx;
  float acc = 0.0f;
  for (int k0 = 0; k0 < K; k0 += T) {
    const int ka = k0 + tx, kb = k0 + ty;
    // The planted off-by-one: `ka <= K` reads one element past the tile's end.
    const bool a_in = row < M && (kBug == kOffByOneTileBound ? ka <= K : ka < K);
    As[ty * T + tx] = a_in ? A[i64(row) * K + ka] : 0.0f;
    Bs[ty * T + tx] = kb < K && col < N ? B[i64(kb) * N + col] : 0.0f;
    if (kBug != kNoSyncAfterLoad) sync_threads();
    for (int k = 0; k < T; ++k)
      acc += As[ty * T + k] * Bs[k * T + tx];
    if (kBug != kNoSyncAfterCompute) sync_threads();
  }
  if (row < M && col < N) C[i64(row) * N + col] = acc;
}

extern "C" __global__ void gemm_tiled_f32(KernelArgs args) { gemm_tiled<kNone>(args); }
extern "C" __global__ void gemm_tiled_no_sync_after_load(KernelArgs args) {
  gemm_tiled<kNoSyncAfterLoad>(args);
}
extern "C" __global__ void gemm_tiled_no_sync_after_compute(KernelArgs args) {
  gemm_tiled<kNoSyncAfterCompute>(args);
}
extern "C" __global__ void gemm_tiled_off_by_one(KernelArgs args) {
  gemm_tiled<kOffByOneTileBound>(args);
}
