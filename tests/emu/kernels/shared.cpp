// Test kernels: barriers and shared memory (static arrays, dynamic shared memory).
#include "common/kiln.cuh"

using namespace kiln;

// out[block] = sum of the block's 256 elements of x, by a tree in shared memory.
extern "C" __global__ void block_sum(KernelArgs args) {
  const auto x = arg<const float>(args, 0);
  const auto out = arg<float>(args, 1);
  KILN_SHARED_ARRAY(float, partial, 256);
  const int t = int(threadIdx.x);
  partial[t] = x[blockIdx.x * 256 + t];
  sync_threads();
  for (int s = 128; s > 0; s >>= 1) {
    if (t < s) partial[t] += partial[t + s];
    sync_threads();
  }
  if (t == 0) out[blockIdx.x] = partial[0];
}

// Two static arrays and two views of the dynamic region (128 ints, then 128 floats), data
// exchanged between threads through all of them; a static array declared in a loop body is
// the same array on every iteration. Block of 128 threads, 1024 bytes of dynamic memory.
extern "C" __global__ void shared_mix(KernelArgs args) {
  const auto out = arg<int>(args, 0);
  const int n = 128, t = int(threadIdx.x);
  KILN_SHARED_ARRAY(int, a, 128);
  KILN_SHARED_ARRAY(short, b, 130);
  const auto d0 = dynamic_shared<int>(0);
  const auto d1 = dynamic_shared<float>(n * 4);
  a[t] = t * 3 + int(blockIdx.x);
  b[t] = short(t);
  d0[t] = 1000 + t;
  d1[t] = 0.5f * float(t);
  if (t < 2) b[128 + t] = -1;
  int carried = 0;
  for (int it = 0; it < 2; ++it) {
    KILN_SHARED_ARRAY(int, loop, 128);
    if (it == 0)
      loop[t] = 7 * t;
    else
      carried = loop[(t + 5) % n];
    sync_threads();
  }
  const int r = n - 1 - t;
  out[int(blockIdx.x) * n + t] =
      a[r] + b[r] + d0[(t + 1) % n] + int(d1[r] * 2.0f) + b[128] + b[129] + carried;
}

// Threads t >= live return at once; the others still meet at their barriers (a barrier
// waits for the threads that are still running).
extern "C" __global__ void early_exit_barrier(KernelArgs args) {
  const auto out = arg<int>(args, 0);
  const int live = arg<const int>(args, 1)[0];
  KILN_SHARED_ARRAY(int, s, 1024);
  const int t = int(threadIdx.x);
  if (t >= live) return;
  s[t] = 3 * t;
  sync_threads();
  const int v = s[(t + 1) % live];
  sync_threads();
  s[t] = v + 1;
  sync_threads();
  out[t] = s[(t + 1) % live];
}

// `rounds` neighbour exchanges through shared memory, two barriers each (the barrier-heavy
// rate). Any block size up to 1024.
extern "C" __global__ void exchange_rounds(KernelArgs args) {
  const auto out = arg<float>(args, 0);
  const int rounds = arg<const int>(args, 1)[0];
  KILN_SHARED_ARRAY(float, s, 1024);
  const int t = thread_linear(), n = int(blockDim.x * blockDim.y * blockDim.z);
  float v = float(t);
  for (int r = 0; r < rounds; ++r) {
    s[t] = v;
    sync_threads();
    v = 0.5f * (v + s[(t + 1) % n]);
    sync_threads();
  }
  out[int(blockIdx.x) * n + t] = v;
}

// What a kernel does with shared elements through the emulator's proxy; 16 ints per thread
// of a 32-thread block.
extern "C" __global__ void proxy_ops(KernelArgs args) {
  const auto out = arg<int>(args, 0);
  KILN_SHARED_ARRAY(int, a, 32);
  KILN_SHARED_ARRAY(float, f, 32);
  KILN_SHARED_ARRAY(unsigned, u, 32);
  const int t = int(threadIdx.x);
  a[t] = t;
  f[t] = float(t) * 0.5f;
  u[t] = 0xf0u;
  a[t] += 10;                // 10 + t
  a[t] -= 3;                 // 7 + t
  a[t] *= 2;                 // 14 + 2t
  ++a[t];                    // 15 + 2t
  const int post = a[t]++;   // 15 + 2t, then 16 + 2t
  --a[t];                    // 15 + 2t
  u[t] |= 0x0fu;             // 0xff
  u[t] ^= 0x01u;             // 0xfe
  u[t] >>= 1;                // 0x7f
  f[t] = f[t] * 2.0f + 1.0f; // t + 1
  sync_threads();
  const int r = 31 - t;
  const auto o = out + i64(t) * 16;
  o[0] = a[t];
  o[1] = post;
  o[2] = int(u[t]);
  o[3] = int(f[t]);
  o[4] = max_of(a[r], 20); // kiln.cuh helpers
  o[5] = min_of(20, a[r]);
  o[6] = max_of(a[t], a[r]);
  o[7] = int(fmaxf(f[r], 10.0f)); // CUDA math
  o[8] = max(a[r], 25);           // CUDA's max
  o[9] = t < 16 ? a[r] : -1;      // conditional
  o[10] = shfl_xor(a[t], 1);      // shuffle of an element
  o[11] = a[r] == a[r] ? 1 : 0;   // comparisons
  o[12] = int(a[r] < f[r]);
  const float g = f[t];  // a copy, as on the device
  o[13] = int(g + a[t]); // arithmetic mixes
  KILN_SHARED_ARRAY(int, b, 32);
  b[t] = a[r]; // element to element (in place would race)
  sync_threads();
  o[14] = b[t];
  atomicAdd(&a[0], 1); // shared atomics through &s[i]
  sync_threads();
  o[15] = a[0];
}
