// Test kernels with faults the emulator must report: out-of-bounds accesses, shared memory
// read before any write, barrier divergence, deadlock, collectives with exited lanes, a
// partial-warp mask, __trap.
#include "common/kiln.cuh"

using namespace kiln;

// out[i] = in[i] for i <= n: one element too far (n = elements of in).
extern "C" __global__ void oob_read(KernelArgs args) {
  const auto in = arg<const float>(args, 0);
  const auto out = arg<float>(args, 1);
  const int n = arg<const int>(args, 2)[0];
  const int i = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (i <= n) out[i < n ? i : 0] = in[i];
}

// out[i + 1] = in[i] for i < n: the last write lands past out.
extern "C" __global__ void oob_write(KernelArgs args) {
  const auto in = arg<const float>(args, 0);
  const auto out = arg<float>(args, 1);
  const int n = arg<const int>(args, 2)[0];
  const int i = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) out[i + 1] = in[i];
}

// Thread t reads s[t + 1]; nobody writes s[63].
extern "C" __global__ void uninit_shared(KernelArgs args) {
  const auto out = arg<float>(args, 0);
  KILN_SHARED_ARRAY(float, s, 64);
  const int t = int(threadIdx.x);
  if (t < 63) s[t] = float(t);
  sync_threads();
  out[t] = s[(t + 1) % 64];
}

// Thread t writes s[t + 1] of a 64-element array: the last one is out of bounds.
extern "C" __global__ void shared_oob(KernelArgs args) {
  const auto out = arg<float>(args, 0);
  KILN_SHARED_ARRAY(float, tile, 64);
  const int t = int(threadIdx.x);
  tile[t + 1] = 1.0f;
  out[t] = 0.0f;
}

// Half the block waits at one barrier, the other half at another.
extern "C" __global__ void divergent_barrier(KernelArgs args) {
  const auto out = arg<float>(args, 0);
  const int t = int(threadIdx.x);
  if (t < 16) sync_threads();
  sync_threads();
  out[t] = 1.0f;
}

// Lanes 0-15 shuffle (waiting for lanes 16-31), which wait at a barrier.
extern "C" __global__ void shuffle_barrier_deadlock(KernelArgs args) {
  const auto out = arg<float>(args, 0);
  const int t = int(threadIdx.x);
  float v = float(t);
  if (t < 16) v = shfl_xor(v, 1);
  sync_threads();
  out[t] = v;
}

// Lanes 16-31 return before the others shuffle.
extern "C" __global__ void shuffle_exited_lanes(KernelArgs args) {
  const auto out = arg<float>(args, 0);
  const int t = int(threadIdx.x);
  if (t >= 16) return;
  out[t] = shfl_xor(float(t), 1);
}

// Lanes 0-15 shuffle while lanes 16-31 ballot.
extern "C" __global__ void mixed_collectives(KernelArgs args) {
  const auto out = arg<int>(args, 0);
  const int t = int(threadIdx.x);
  out[t] = t < 16 ? shfl_xor(t, 1) : int(kiln::ballot(t > 20));
}

extern "C" __global__ void partial_mask(KernelArgs args) {
  const auto out = arg<int>(args, 0);
  const int t = int(threadIdx.x);
  out[t] = __shfl_sync(0x0000ffffu, t, 0);
}

extern "C" __global__ void trap(KernelArgs args) {
  const auto out = arg<int>(args, 0);
  const int t = int(threadIdx.x);
  if (t == 3) __trap();
  out[t] = t;
}

// Out of bounds in blocks 5 and 9 only (block of 32, in has 32 * 16 floats).
extern "C" __global__ void oob_in_blocks_5_and_9(KernelArgs args) {
  const auto in = arg<const float>(args, 0);
  const auto out = arg<float>(args, 1);
  const int b = int(blockIdx.x), t = int(threadIdx.x);
  const int i = b * 32 + t + (b == 5 || b == 9 ? 100000 : 0);
  out[b * 32 + t] = in[i];
}
