// Test kernels: warp collectives (the kiln API and the CUDA builtins with widths).
#include "common/kiln.cuh"

using namespace kiln;

// 65 ints per thread: shfl_xor for masks 1..31, shfl_down for deltas 0..31, shfl_idx from
// lane (7 lane + 3) % 32, ballot(v & 1).
extern "C" __global__ void warp_ops(KernelArgs args) {
  const auto in = arg<const int>(args, 0);
  const auto out = arg<int>(args, 1);
  const int g = int(blockIdx.x * blockDim.x + threadIdx.x);
  const int v = in[g];
  const auto o = out + i64(g) * 65;
  for (int m = 1; m < 32; ++m)
    o[m - 1] = shfl_xor(v, m);
  for (int d = 0; d < 32; ++d)
    o[31 + d] = shfl_down(v, d);
  o[63] = shfl_idx(v, (lane_id() * 7 + 3) % 32);
  o[64] = int(kiln::ballot((v & 1) != 0));
}

// The CUDA builtins with sub-warp widths, on floats and doubles: 4 values per thread.
extern "C" __global__ void shfl_width(KernelArgs args) {
  const auto in = arg<const float>(args, 0);
  const auto out = arg<double>(args, 1);
  const int g = int(blockIdx.x * blockDim.x + threadIdx.x);
  const float v = in[g];
  out[4 * g + 0] = __shfl_sync(0xffffffffu, v, 5, 8);
  out[4 * g + 1] = __shfl_down_sync(0xffffffffu, v, 3u, 16);
  out[4 * g + 2] = __shfl_xor_sync(0xffffffffu, v, 6, 4);
  out[4 * g + 3] = __shfl_xor_sync(0xffffffffu, double(v) * 0.25, 17);
}

// Warp sums by a butterfly: out[warp] (every lane must agree, else NaN).
extern "C" __global__ void warp_sum(KernelArgs args) {
  const auto in = arg<const float>(args, 0);
  const auto out = arg<float>(args, 1);
  const int g = int(blockIdx.x * blockDim.x + threadIdx.x);
  float v = __ldg(&in[g]);
  for (int m = 16; m > 0; m >>= 1)
    v += shfl_xor(v, m);
  const float lane0 = shfl_idx(v, 0);
  if (lane_id() == 0) out[g / 32] = v;
  if (lane0 != v) out[g / 32] = NAN;
}

// Lanes exchange values through shared memory, two rounds: each lane writes its slot, reads
// the previous lane's (lane 0 lane 31's; mode 2 the next lane's; mode 3 warp 1 warp 0's), then
// overwrites its own slot. sync_warp between the steps orders them (args[2][0]: 0 none, 1
// all, 2 the first only, 3 all, but a __syncwarp does not order another warp's writes; 4
// all, four lanes reading each of eight slots);
// out = the two reads. Without a sync (mode 0) lane 0 reads its own slot: the emulator runs
// lanes in order, and lane 31's would not be written yet.
extern "C" __global__ void warp_exchange(KernelArgs args) {
  const auto in = arg<const int>(args, 0);
  const auto out = arg<int>(args, 1);
  const int mode = arg<const int>(args, 2)[0];
  KILN_SHARED_ARRAY(int, slot, 64);
  const int t = int(threadIdx.x), w = t / 32, lane = t % 32;
  const int from = mode == 4   ? 32 * w + (lane / 4 * 4 + 5) % 32 // four readers a slot
                   : mode == 3 ? (w == 1 ? t - 32 : t)
                   : mode == 0 ? (lane == 0 ? t : t - 1)
                   : mode == 2 ? 32 * w + (lane + 1) % 32 // read before its owner rewrites it
                               : 32 * w + (lane + 31) % 32;
  slot[t] = in[t];
  if (mode != 0) sync_warp();
  const int first = slot[from];
  if (mode == 1 || mode >= 3) sync_warp();
  slot[t] = 2 * in[t];
  if (mode != 0) sync_warp();
  out[2 * t] = first;
  out[2 * t + 1] = slot[from];
}
