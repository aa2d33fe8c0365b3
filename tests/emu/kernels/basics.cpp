// Test kernels: launch geometry, a simple elementwise kernel (the emulated rate), number
// format conversions. Written only against kiln.cuh, as templates are.
#include "common/kiln.cuh"

using namespace kiln;

// y = 2 x + y over n = params[0] elements.
extern "C" __global__ void __launch_bounds__(256) saxpy(KernelArgs args) {
  const auto x = arg<const float>(args, 0);
  const auto y = arg<float>(args, 1);
  const int n = arg<const int>(args, 2)[0];
  const int i = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) y[i] = 2.0f * x[i] + y[i];
}

// Every thread writes its built-in variables: 12 ints at its global linear index.
extern "C" __global__ void geometry(KernelArgs args) {
  const auto out = arg<int>(args, 0);
  const int block = int(blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z));
  const int per_block = int(blockDim.x * blockDim.y * blockDim.z);
  const auto o = out + i64(block * per_block + thread_linear()) * 12;
  const unsigned v[12] = {threadIdx.x, threadIdx.y, threadIdx.z, blockIdx.x, blockIdx.y, blockIdx.z,
                          blockDim.x,  blockDim.y,  blockDim.z,  gridDim.x,  gridDim.y,  gridDim.z};
  for (int k = 0; k < 12; ++k)
    o[k] = int(v[k]);
}

// Per element of in: f16, bf16 and tf32 bits, and the f16 and bf16 values back in float.
extern "C" __global__ void conversions(KernelArgs args) {
  const auto in = arg<const float>(args, 0);
  const auto h = arg<u16>(args, 1);
  const auto b = arg<u16>(args, 2);
  const auto t = arg<u32>(args, 3);
  const auto back = arg<float>(args, 4);
  const int n = arg<const int>(args, 5)[0];
  const int i = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= n) return;
  h[i] = float_to_half(in[i]);
  b[i] = float_to_bf16(in[i]);
  t[i] = float_to_tf32(in[i]);
  back[2 * i] = to_float(from_float<f16>(in[i]));
  back[2 * i + 1] = to_float(from_float<bf16>(in[i]));
}

// Every f16 bit pattern through float and back.
extern "C" __global__ void half_roundtrip(KernelArgs args) {
  const auto out = arg<u16>(args, 0);
  const int i = int(blockIdx.x * blockDim.x + threadIdx.x);
  out[i] = float_to_half(half_to_float(u16(i)));
}
