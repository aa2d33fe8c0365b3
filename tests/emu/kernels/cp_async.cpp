// Test kernels: cp.async copies into dynamic shared memory in two commit groups, chunks past
// n zero-filled; and the same with the second wait missing.
#include "common/kiln.cuh"

using namespace kiln;

// Each of the nt threads copies 16-byte chunks t and t + nt of src (n floats) into shared
// memory; then every thread writes chunk (t + 1) % nt of each half, doubled, to dst.
template <bool kMissingWait> KILN_FN void copy_two_groups(const KernelArgs& args) {
  const auto src = arg<const float>(args, 0);
  const auto dst = arg<float>(args, 1);
  const int n = arg<const int>(args, 2)[0];
  const auto s = dynamic_shared<float>(0);
  const int t = int(threadIdx.x), nt = int(blockDim.x);
  cp_async_16(s + 4 * t, src + 4 * t, 4 * t + 4 <= n);
  cp_async_commit();
  cp_async_16(s + 4 * (t + nt), src + 4 * (t + nt), 4 * (t + nt) + 4 <= n);
  cp_async_commit();
  cp_async_wait<1>();
  sync_threads();
  const int c = (t + 1) % nt;
  for (int j = 0; j < 4; ++j)
    dst[4 * c + j] = 2.0f * s[4 * c + j];
  if (!kMissingWait) cp_async_wait<0>();
  sync_threads();
  for (int j = 0; j < 4; ++j)
    dst[4 * (c + nt) + j] = 2.0f * s[4 * (c + nt) + j];
}

extern "C" __global__ void cp_async_copy(KernelArgs args) { copy_two_groups<false>(args); }
extern "C" __global__ void cp_async_missing_wait(KernelArgs args) { copy_two_groups<true>(args); }
