// The Hopper conv instances on a real sm_90 GPU (suite gpu; exit 77 without one): NVRTC for
// sm_90a, tensor maps encoded by the driver (runtime/cuda/tensor_map.cpp) into device
// buffers, each instance run on fresh random inputs with y poisoned, against the float64
// reference the emulator test uses; then timed (median of 50 launches, events). This is
// what confirms on hardware the layouts the emulator assumes (TMA swizzle, wgmma
// descriptors and accumulator fragments, tf32 operands rounded in shared memory).
#define DOCTEST_CONFIG_IMPLEMENT
#include "generator/compile/nvrtc.hpp"
#include "runtime/cuda/tensor_map.hpp"
#include "tests/kernels/hopper/conv_cases.hpp"

#include <doctest/doctest.h>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

using namespace hopper_test;

namespace {

#define CUDA_OK(call)                                                                              \
  do {                                                                                             \
    const cudaError_t e_ = (call);                                                                 \
    INFO(#call << ": " << cudaGetErrorString(e_));                                                 \
    REQUIRE(e_ == cudaSuccess);                                                                    \
  } while (0)

struct DeviceBuffer {
  void* p = nullptr;
  explicit DeviceBuffer(std::size_t n) { CUDA_OK(cudaMalloc(&p, std::max<std::size_t>(n, 256))); }
  ~DeviceBuffer() { cudaFree(p); }
};

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

} // namespace

TEST_CASE("Hopper conv instances on the GPU match the float64 reference") {
  // The instances' source: beside the binary in `make bundle`'s tarball, named by the
  // environment there; in the build tree, where meson says.
  const char* env = std::getenv("KILN_HOPPER_CONV_SOURCE");
  const std::string src = read_file(env ? env : KILN_HOPPER_CONV_SOURCE);
  REQUIRE(!src.empty());
  for (const Instance& in : kInstances) {
    const std::string entry = std::string("conv_hopper_") + in.name;
    CAPTURE(entry);
    const kiln::CompileOutput out = kiln::nvrtc_compile(src, "conv_instances.cu", entry, "sm_90a");
    INFO(out.log);
    REQUIRE(out.ok);
    cudaLibrary_t lib{};
    cudaKernel_t kernel{};
    CUDA_OK(cudaLibraryLoadData(&lib, out.image.data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
    CUDA_OK(cudaLibraryGetKernel(&kernel, lib, entry.c_str()));
    const void* fn = reinterpret_cast<const void*>(kernel);
    CUDA_OK(cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 int(Problem::smem(in))));
    for (unsigned seed : {1u, 2u}) {
      Problem pb(in, seed);
      DeviceBuffer x(pb.x.bytes.size()), w(pb.w.bytes.size()), y(pb.y.bytes.size()),
          bias(pb.bias.bytes.size()), res(pb.res.bytes.size()), wm(128);
      CUDA_OK(cudaMemcpy(x.p, pb.x.bytes.data(), pb.x.bytes.size(), cudaMemcpyHostToDevice));
      CUDA_OK(cudaMemcpy(w.p, pb.w.bytes.data(), pb.w.bytes.size(), cudaMemcpyHostToDevice));
      CUDA_OK(cudaMemcpy(y.p, pb.y.bytes.data(), pb.y.bytes.size(), cudaMemcpyHostToDevice));
      CUDA_OK(
          cudaMemcpy(bias.p, pb.bias.bytes.data(), pb.bias.bytes.size(), cudaMemcpyHostToDevice));
      CUDA_OK(cudaMemcpy(res.p, pb.res.bytes.data(), pb.res.bytes.size(), cudaMemcpyHostToDevice));
      void* args[16] = {};
      int nargs = 0;
      std::vector<std::unique_ptr<DeviceBuffer>> xm; // one map per stride parity
      for (const KilnTensorMap& m : pb.x_maps(in, x.p)) {
        const kiln::EncodedTensorMap xe = kiln::encode_tensor_map(m);
        xm.push_back(std::make_unique<DeviceBuffer>(128));
        CUDA_OK(cudaMemcpy(xm.back()->p, xe.data(), 128, cudaMemcpyHostToDevice));
        args[nargs++] = xm.back()->p;
      }
      const kiln::EncodedTensorMap we = kiln::encode_tensor_map(pb.w_map(in, w.p));
      CUDA_OK(cudaMemcpy(wm.p, we.data(), 128, cudaMemcpyHostToDevice));
      for (void* a : {wm.p, x.p, w.p, y.p})
        args[nargs++] = a;
      if (in.bias) args[nargs++] = bias.p;
      if (in.residual) args[nargs++] = res.p;
      void* params[] = {args}; // the one KernelArgs parameter: 16 pointers by value
      // Seed 1: one tile per block; seed 2: two persistent blocks looping over the tiles (a
      // cluster's kernel declares its cluster: __cluster_dims__).
      const unsigned blocks = seed == 1 ? pb.tiles(in) : Problem::blocks(in, pb.tiles(in), 2u);
      auto launch = [&] {
        return cudaLaunchKernel(fn, dim3(blocks), dim3(Problem::threads(in)), params,
                                Problem::smem(in), nullptr);
      };
      CUDA_OK(launch());
      CUDA_OK(cudaDeviceSynchronize());
      CUDA_OK(cudaMemcpy(pb.y.bytes.data(), y.p, pb.y.bytes.size(), cudaMemcpyDeviceToHost));
      const double err = pb.error(in);
      CHECK(err < (in.dtype == 1 ? 1e-2 : in.dtype == 2 ? 5e-5 : 2e-3));
      cudaEvent_t a, b;
      CUDA_OK(cudaEventCreate(&a));
      CUDA_OK(cudaEventCreate(&b));
      std::vector<float> ms;
      for (int i = 0; i < 50; ++i) {
        CUDA_OK(cudaEventRecord(a));
        CUDA_OK(launch());
        CUDA_OK(cudaEventRecord(b));
        CUDA_OK(cudaEventSynchronize(b));
        float t = 0;
        CUDA_OK(cudaEventElapsedTime(&t, a, b));
        ms.push_back(t);
      }
      std::nth_element(ms.begin(), ms.begin() + 25, ms.end());
      std::printf("%s seed %u: max |y - ref| / (|ref| + 1) = %.3g, median %.2f us\n", in.name, seed,
                  err, 1000.0 * ms[25]);
      cudaEventDestroy(a);
      cudaEventDestroy(b);
    }
    cudaLibraryUnload(lib);
  }
}

int main(int argc, char** argv) {
  int n = 0;
  cudaDeviceProp prop{};
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    std::printf("gpu_hopper: no CUDA device: skipped\n");
    return 77;
  }
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess || prop.major != 9 || prop.minor != 0) {
    std::printf("gpu_hopper: device 0 is not sm_90 (%d.%d): skipped\n", prop.major, prop.minor);
    return 77;
  }
  doctest::Context ctx(argc, argv);
  return ctx.run();
}
