// Test kernels: atomics on global memory (blocks on several workers) and on shared memory.
#include "common/kiln.cuh"

using namespace kiln;

// counts[x % 64] += 1 and total += x % 7 for each of the n elements of x.
extern "C" __global__ void histogram(KernelArgs args) {
  const auto x = arg<const int>(args, 0);
  const auto counts = arg<int>(args, 1);
  const auto total = arg<float>(args, 2);
  const int n = arg<const int>(args, 3)[0];
  const int i = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= n) return;
  atomicAdd(&counts[x[i] % 64], 1);
  atomic_add(&total[0], float(x[i] % 7));
}

// The same histogram per block in shared memory (shared atomics), then merged.
extern "C" __global__ void histogram_shared(KernelArgs args) {
  const auto x = arg<const int>(args, 0);
  const auto counts = arg<unsigned>(args, 1);
  const auto total = arg<float>(args, 2);
  const int n = arg<const int>(args, 3)[0];
  KILN_SHARED_ARRAY(unsigned, h, 64);
  KILN_SHARED_ARRAY(float, sum, 1);
  const int t = int(threadIdx.x);
  if (t < 64) h[t] = 0u;
  if (t == 0) sum[0] = 0.0f;
  sync_threads();
  for (int i = int(blockIdx.x * blockDim.x) + t; i < n; i += int(gridDim.x * blockDim.x)) {
    atomicAdd(&h[x[i] % 64], 1u);
    atomic_add(&sum[0], float(x[i] % 7));
  }
  sync_threads();
  if (t < 64) atomicAdd(&counts[t], unsigned(h[t]));
  if (t == 0) atomic_add(&total[0], float(sum[0]));
}
