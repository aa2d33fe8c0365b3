/* kiln's description of a TMA tensor map: what a kernel's bulk tensor copies read. Plain C
 * so that the CUDA runtime (which encodes it into a CUtensorMap through the driver's
 * cuTensorMapEncodeTiled, reached by cudaGetDriverEntryPoint) and the emulator (which
 * interprets it directly, runtime/emu/device/hopper_tma.hpp) share one definition.
 *
 * Tiled mode (mode 0): a box of box[0] x ... x box[rank-1] elements at integer coordinates
 * (dimension 0 fastest, contiguous in global memory); coordinates outside [0, dims[d]) read
 * zeros (CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE), and still count toward the transaction bytes.
 * The box lands in shared memory densely, dimension 0 fastest, its rows of box[0] *
 * elem_bytes bytes permuted within each 16-byte chunk group by the swizzle mode (address
 * bits [4, 4+log2(swizzle/16)) XOR bits [7, ...)), as the PTX ISA's tensor swizzling modes.
 *
 * Im2col mode (mode 1, cuTensorMapEncodeIm2col; rank 4 or 5: C, W, H[, D], N): a copy brings
 * im2col.pixels rows of im2col.channels elements. Its coordinates (c, w, h[, d], n) name the
 * first pixel's position in the bounding box; pixel positions then advance along W by
 * element_strides[1], and past the box's last W position (dims[1] - 1 + upper[0]) return to
 * its first (lower[0]) and advance H, and so on through N. Pixel (n, w, h) reads channels
 * c.. of x at (n, w + offset_w, h + offset_h), the copy's im2col offsets (the filter tap);
 * out-of-bounds elements read zeros. The rows land as a tiled box's rows do.
 */
#ifndef KILN_EMU_TENSOR_MAP_H
#define KILN_EMU_TENSOR_MAP_H

#ifdef __cplusplus
extern "C" {
#endif

#define KILN_TMA_MAX_RANK 5

#define KILN_TMA_TILED 0u
#define KILN_TMA_IM2COL 1u

/* Im2col mode's box: its corners per spatial dimension, W first (rank 4: -128..127; rank 5:
 * -16..15), and its traversal strides per dimension (1..8; element_strides[0] = 1). */
typedef struct KilnIm2col {
  unsigned short channels; /* elements per pixel: 1..256 */
  unsigned short pixels;   /* pixels per copy: 1..1024 */
  signed char lower[3];    /* the box's first position, from 0 */
  signed char upper[3];    /* its last, from dims[d] - 1 */
  unsigned char element_strides[KILN_TMA_MAX_RANK];
  unsigned char unused;
} KilnIm2col;

typedef struct KilnTensorMap {
  const void* global;                            /* element (0, ..., 0); 16-byte aligned */
  unsigned long long dims[KILN_TMA_MAX_RANK];    /* elements per dimension */
  unsigned long long strides[KILN_TMA_MAX_RANK]; /* bytes; strides[0] = elem_bytes */
  union {
    unsigned box[KILN_TMA_MAX_RANK]; /* tiled: box elements per dimension (1..256) */
    KilnIm2col im2col;               /* im2col */
  };
  unsigned rank;       /* 1..5 */
  unsigned elem_bytes; /* 1, 2, 4 or 8 */
  unsigned swizzle;    /* bytes: 0 (none), 32, 64 or 128 */
  unsigned mode;       /* KILN_TMA_TILED or KILN_TMA_IM2COL */
} KilnTensorMap;

#ifdef __cplusplus
}
#endif

#endif /* KILN_EMU_TENSOR_MAP_H */
