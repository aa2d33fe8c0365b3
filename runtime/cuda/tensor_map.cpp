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
  if (m.mode != KILN_TMA_TILED && m.mode != KILN_TMA_IM2COL) return "mode not tiled or im2col";
  const bool im2col = m.mode == KILN_TMA_IM2COL;
  if (im2col && m.rank != 4 && m.rank != 5) return "an im2col map of rank other than 4 or 5";
  for (unsigned d = 0; d < m.rank; ++d) {
    if (m.dims[d] == 0 || m.dims[d] > (1ull << 32)) return "a dimension outside 1..2^32";
    if (!im2col && (m.box[d] == 0 || m.box[d] > 256)) return "a box dimension outside 1..256";
    if (im2col && (m.im2col.element_strides[d] < 1 || m.im2col.element_strides[d] > 8 ||
                   (d == 0 && m.im2col.element_strides[0] != 1)))
      return "an im2col traversal stride outside 1..8 (1 for dimension 0)";
    if (d > 0 && (m.strides[d] % 16 || m.strides[d] >= (1ull << 40)))
      return "a stride that is not a multiple of 16 bytes below 2^40";
  }
  if (im2col && (m.im2col.channels == 0 || m.im2col.channels > 256 || m.im2col.pixels == 0 ||
                 m.im2col.pixels > 1024))
    return "im2col channels outside 1..256 or pixels outside 1..1024";
  const unsigned long long row = 1ull * (im2col ? m.im2col.channels : m.box[0]) * m.elem_bytes;
  if (row % 16) return "a box row (box[0] or im2col channels) not a multiple of 16 bytes";
  if (m.swizzle && row > m.swizzle) return "a box row wider than the swizzle span";
  return "";
}

namespace {

// The driver's function `name` (its CUDA 12.0 version), or a clear error without one.
void* driver_entry(const char* name) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found{};
  const cudaError_t e =
      cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &found);
  if (e != cudaSuccess || found != cudaDriverEntryPointSuccess || !fn)
    throw Error(std::string("tensor map: the driver offers no ") + name + " (" +
                cudaGetErrorString(e) + "); TMA kernels need a CUDA 12+ driver");
  return fn;
}

} // namespace

EncodedTensorMap encode_tensor_map(const KilnTensorMap& m) {
  if (const char* p = tensor_map_problem(m); *p) throw Error(std::string("tensor map: ") + p);
  const bool im2col = m.mode == KILN_TMA_IM2COL;
  void* fn = driver_entry(im2col ? "cuTensorMapEncodeIm2col" : "cuTensorMapEncodeTiled");
  using Encode =
      CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                   const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                   CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
  using EncodeIm2col = CUresult (*)(
      CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*, const cuuint64_t*,
      const int*, const int*, cuuint32_t, cuuint32_t, const cuuint32_t*, CUtensorMapInterleave,
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
    box[d] = im2col ? 0 : m.box[d];
    estr[d] = im2col ? m.im2col.element_strides[d] : 1;
    if (d > 0) strides[d - 1] = m.strides[d]; // the driver takes dimensions 1.. only
  }
  CUtensorMap out{};
  // Out-of-bounds elements read as zeros (FLOAT_OOB_FILL_NONE), as the emulator fills them.
  CUresult r;
  if (im2col) { // the box's corners, W first, as the emulator reads them
    int lower[3], upper[3];
    for (unsigned s = 0; s + 2 < m.rank; ++s) {
      lower[s] = m.im2col.lower[s];
      upper[s] = m.im2col.upper[s];
    }
    r = reinterpret_cast<EncodeIm2col>(fn)(
        &out, type, m.rank, const_cast<void*>(m.global), dims, strides, lower, upper,
        m.im2col.channels, m.im2col.pixels, estr, CU_TENSOR_MAP_INTERLEAVE_NONE, sw,
        CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  } else
    r = reinterpret_cast<Encode>(fn)(&out, type, m.rank, const_cast<void*>(m.global), dims, strides,
                                     box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE, sw,
                                     CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                                     CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    throw Error(std::string("tensor map: ") +
                (im2col ? "cuTensorMapEncodeIm2col" : "cuTensorMapEncodeTiled") +
                " refused it (CUresult " + std::to_string(int(r)) + ")");
  static_assert(sizeof(CUtensorMap) == sizeof(EncodedTensorMap));
  EncodedTensorMap bytes;
  std::memcpy(bytes.data(), &out, sizeof out);
  return bytes;
}

} // namespace kiln
