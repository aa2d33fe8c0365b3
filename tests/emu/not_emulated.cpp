// Compiled (syntax only) by check_not_emulated.py once per CASE_*: each must fail with a
// message naming what is not emulated; with no case defined it must compile.
#include "common/kiln.cuh"

using namespace kiln;

extern "C" __global__ void uses_something(KernelArgs args) {
  const auto out = arg<int>(args, 0);
  KILN_SHARED_ARRAY(float, s, 32);
  int v = int(threadIdx.x);
  s[v] = 1.0f;
#if defined(CASE_shfl_up)
  v = __shfl_up_sync(0xffffffffu, v, 1);
#elif defined(CASE_syncwarp)
  __syncwarp();
#elif defined(CASE_atomicCAS)
  atomicCAS(&out[0], 0, v);
#elif defined(CASE_threadfence_block)
  __threadfence_block();
#elif defined(CASE_syncthreads_count)
  v = __syncthreads_count(v > 3);
#elif defined(CASE_clock64)
  v = int(clock64());
#elif defined(CASE_dsmem)
  v += __cluster_map_shared_rank(v, 1);
#elif defined(CASE_asm)
  asm volatile("bar.sync 0;");
#elif defined(CASE_raw_shared)
  __shared__ float raw[32];
  raw[0] = 1.0f;
#elif defined(CASE_kept_proxy)
  auto x = s[v];
  s[v] = 2.0f;
  const float y = x * 2.0f;
  v = int(y);
#elif defined(CASE_shared_pointer)
  float* p = &s[0];
  *p = 2.0f;
#endif
  out[v] = v;
}
