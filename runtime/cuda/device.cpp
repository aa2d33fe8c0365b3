#include "runtime/cuda/device.hpp"

#include "runtime/error.hpp"

#include <cuda_runtime_api.h>

namespace kiln {

DeviceInfo require_device(const std::string& arch, int ordinal) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) cudaGetLastError();
  if (e == cudaErrorInsufficientDriver)
    throw Error("", "cuda", "no usable NVIDIA driver: libcuda.so.1 is missing or older than this CUDA runtime");
  if (e == cudaErrorNoDevice || (e == cudaSuccess && count == 0))
    throw Error("", "cuda", "the NVIDIA driver reports no GPU");
  if (e != cudaSuccess) throw Error("", "cuda", cat("cannot query GPUs: ", cudaGetErrorString(e)));
  if (ordinal < 0 || ordinal >= count) throw Error("", "cuda", cat("no GPU ", ordinal, " (", count, " present)"));
  cudaDeviceProp p{};
  if (cudaGetDeviceProperties(&p, ordinal) != cudaSuccess) throw Error("", "cuda", "cannot read the GPU's properties");
  DeviceInfo d{p.name, cat("sm_", p.major, p.minor), ordinal};
  const std::string want = arch.size() > 5 && arch.back() == 'a' ? arch.substr(0, arch.size() - 1) : arch;
  if (!want.empty() && want != d.arch)
    throw Error("", "cuda", cat("the kernels were generated for ", arch, " but GPU ", ordinal, " (", d.name, ") is ",
                                d.arch, "; regenerate them for this GPU (kiln gpu detect, kiln generate --gpu)"));
  if (cudaSetDevice(ordinal) != cudaSuccess) throw Error("", "cuda", cat("cannot use GPU ", ordinal));
  return d;
}

} // namespace kiln
