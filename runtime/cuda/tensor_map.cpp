#include "runtime/cuda/tensor_map.hpp"

#include "runtime/error.hpp"

#include <cuda.h> // types and enums only: the function comes from the driver at run time
#include <cuda_runtime_api.h>

#include <cstring>
#include <string>

namespace kiln {

const char* tensor_map_problem(const KilnTensorMap& m) {
  if (m.rank < 1 || m.rank > KILN_TMA_MAX_RANK) return "rank outside 1..5";
  if (m.elem_bytes != 1 && m.elem_bytes != 2 && m.elem_bytes != 4 && m.elem_bytes != 8)
    return "element size not 1, 2, 4 or 8 bytes";
  if (!m.global || reinterpret_cast<std::uintptr_t>(m.global) % 16)
    return "global address not 16-byte aligned";
  if (m.swizzle != 0 && m.swizzle != 32 && m.swizzle != 64 && m.swizzle != 128)
    return "swizzle not 0, 32, 64 or 128 bytes";
  if (m.strides[0] != m.elem_bytes) return "strides[0] is not the element size";
  for (unsigned d = 0; d < m.rank; ++d) {
    if (m.dims[d] == 0 || m.dims[d] > (1ull << 32)) return "a dimension outside 1..2^32";
    if (m.box[d] == 0 || m.box[d] > 256) return "a box dimension outside 1..256";
    if (d > 0 && (m.strides[d] % 16 || m.strides[d] >= (1ull << 40)))
      return "a stride that is not a multiple of 16 bytes below 2^40";
  }
  const unsigned long long row = 1ull * m.box[0] * m.elem_bytes;
  if (row % 16) return "box[0] * element size not a multiple of 16 bytes";
  if (m.swizzle && row > m.swizzle) return "a box row wider than the swizzle span";
  return "";
}

EncodedTensorMap encode_tensor_map(const KilnTensorMap& m) {
  if (const char* p = tensor_map_problem(m); *p) throw Error(std::string("tensor map: ") + p);
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found{};
  const cudaError_t e = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000,
                                                         cudaEnableDefault, &found);
  if (e != cudaSuccess || found != cudaDriverEntryPointSuccess || !fn)
    throw Error(std::string("tensor map: the driver offers no cuTensorMapEncodeTiled (") +
                cudaGetErrorString(e) + "); TMA kernels need a CUDA 12+ driver");
  using Encode =
      CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                   const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                   CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
  const CUtensorMapDataType type = m.elem_bytes == 1   ? CU_TENSOR_MAP_DATA_TYPE_UINT8
                                   : m.elem_bytes == 2 ? CU_TENSOR_MAP_DATA_TYPE_UINT16
                                   : m.elem_bytes == 4 ? CU_TENSOR_MAP_DATA_TYPE_UINT32
                                                       : CU_TENSOR_MAP_DATA_TYPE_INT64;
  const CUtensorMapSwizzle sw = m.swizzle == 128  ? CU_TENSOR_MAP_SWIZZLE_128B
                                : m.swizzle == 64 ? CU_TENSOR_MAP_SWIZZLE_64B
                                : m.swizzle == 32 ? CU_TENSOR_MAP_SWIZZLE_32B
                                                  : CU_TENSOR_MAP_SWIZZLE_NONE;
  cuuint64_t dims[KILN_TMA_MAX_RANK], strides[KILN_TMA_MAX_RANK];
  cuuint32_t box[KILN_TMA_MAX_RANK], estr[KILN_TMA_MAX_RANK];
  for (unsigned d = 0; d < m.rank; ++d) {
    dims[d] = m.dims[d];
    box[d] = m.box[d];
    estr[d] = 1;
    if (d > 0) strides[d - 1] = m.strides[d]; // the driver takes dimensions 1.. only
  }
  CUtensorMap out{};
  // Out-of-bounds elements read as zeros (FLOAT_OOB_FILL_NONE), as the emulator fills them.
  const CUresult r = reinterpret_cast<Encode>(fn)(
      &out, type, m.rank, const_cast<void*>(m.global), dims, strides, box, estr,
      CU_TENSOR_MAP_INTERLEAVE_NONE, sw, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    throw Error("tensor map: cuTensorMapEncodeTiled refused it (CUresult " +
                std::to_string(int(r)) + ")");
  static_assert(sizeof(CUtensorMap) == sizeof(EncodedTensorMap));
  EncodedTensorMap bytes;
  std::memcpy(bytes.data(), &out, sizeof out);
  return bytes;
}

} // namespace kiln
