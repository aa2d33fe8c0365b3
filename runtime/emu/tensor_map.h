/* kiln's description of a TMA tensor map: what a kernel's bulk tensor copies read. Plain C
 * so that the CUDA runtime (which encodes it into a CUtensorMap through the driver's
 * cuTensorMapEncodeTiled, reached by cudaGetDriverEntryPoint) and the emulator (which
 * interprets it directly, runtime/emu/device/hopper_tma.hpp) share one definition.
 *
 * Tiled mode only: a box of box[0] x ... x box[rank-1] elements at integer coordinates
 * (dimension 0 fastest, contiguous in global memory); coordinates outside [0, dims[d]) read
 * zeros (CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE), and still count toward the transaction bytes.
 * The box lands in shared memory densely, dimension 0 fastest, its rows of box[0] *
 * elem_bytes bytes permuted within each 16-byte chunk group by the swizzle mode (address
 * bits [4, 4+log2(swizzle/16)) XOR bits [7, ...)), as the PTX ISA's tensor swizzling modes.
 */
#ifndef KILN_EMU_TENSOR_MAP_H
#define KILN_EMU_TENSOR_MAP_H

#ifdef __cplusplus
extern "C" {
#endif

#define KILN_TMA_MAX_RANK 5

typedef struct KilnTensorMap {
  const void* global;                            /* element (0, ..., 0); 16-byte aligned */
  unsigned long long dims[KILN_TMA_MAX_RANK];    /* elements per dimension */
  unsigned long long strides[KILN_TMA_MAX_RANK]; /* bytes; strides[0] = elem_bytes */
  unsigned box[KILN_TMA_MAX_RANK];               /* box elements per dimension (1..256) */
  unsigned rank;                                 /* 1..5 */
  unsigned elem_bytes;                           /* 1, 2, 4 or 8 */
  unsigned swizzle;                              /* bytes: 0 (none), 32, 64 or 128 */
  unsigned reserved;
} KilnTensorMap;

#ifdef __cplusplus
}
#endif

#endif /* KILN_EMU_TENSOR_MAP_H */
