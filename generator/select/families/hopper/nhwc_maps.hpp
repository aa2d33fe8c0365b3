// The TMA tensor maps the Hopper families read NHWC activations through (DESIGN.md 4.4):
// tiled boxes of one swizzle row of channels, out-of-bounds elements read as zeros.
#pragma once

#include "runtime/plan.hpp"

#include <cstdint>
#include <optional>
#include <vector>

namespace kiln {

// The bytes of channels a Hopper tile's stage brings per row, its swizzle: the widest swizzle
// row (128, 64 or 32 bytes) `channel_bytes` is a multiple of; 0 where none is. 32 serves mobile
// nets' 16, 144 or 240 channels in f16, at 4 times the stages (and barriers) per k of 128.
int64_t row_swizzle(int64_t channel_bytes);

// An NHWC activation b ([N, C, H, W] logically, its pixels `pitch` elements apart) as the
// SH * SW maps of its row and column parities: map (ph, pw) = ph * SW + pw holds rows ph, ph +
// SH, ... and columns pw, pw + SW, ... as [N][ceil((H - ph) / SH)][ceil((W - pw) / SW)][C],
// boxes of box_c channels x tq columns x tp rows x 1 image. A strided conv's tap reads one
// parity at consecutive indices (conv/hopper/igemm_wgmma.cuh).
std::vector<TensorMapEncode> parity_maps(const Buffer& b, int64_t N, int64_t C, int64_t H,
                                         int64_t W, int64_t SH, int64_t SW, int64_t pitch,
                                         int64_t swizzle, int64_t box_c, int64_t tq, int64_t tp);

// b's rows 0, SH, 2 SH, ... of every image as one sequence of N * H / SH rows (H a multiple
// of SH: image n's row k is row n * H / SH + k), columns 0, SW, ...: [N * H / SH][ceil(W /
// SW)][C], boxes of box_c channels x tq columns x tp rows (a strided 1x1 conv's ROW_TILES).
TensorMapEncode image_rows_map(const Buffer& b, int64_t N, int64_t C, int64_t H, int64_t W,
                               int64_t SH, int64_t SW, int64_t pitch, int64_t swizzle,
                               int64_t box_c, int64_t tq, int64_t tp);

// An NHWC activation b [N, C, H, W] (unpitched) as rows of `taps` consecutive pixels' channels,
// a pixel apart: [N][H][ow][taps * C], column q the pixels q .. q + taps - 1 (q + taps - 1 <
// W), boxes of box_c x tq columns x tp rows x 1 image. The rows overlap: a stride-1 conv
// unpadded across reads its `taps` taps of a row as one (the Hopper family's TAPS_ROW).
TensorMapEncode overlapping_taps_map(const Buffer& b, int64_t N, int64_t C, int64_t H, int64_t W,
                                     int64_t taps, int64_t ow, int64_t box_c, int64_t tq,
                                     int64_t tp);

// An NHWC activation b [N, C, H, W] (its pixels `pitch` elements apart) as an im2col map (C,
// W, H, N) for a KHxKW conv of strides SH, SW and padding PH, PW to OH x OW: its bounding box
// the taps' first positions (-PW .. -PW + (OW - 1) * SW across, likewise down), traversed by
// the strides; a copy brings `pixels` consecutive output pixels' box_c channels, a tap being
// the copy's offsets (the Hopper family's IM2COL). nullopt where the corners fall outside the
// driver's range for rank 4 (-128..127).
std::optional<TensorMapEncode> im2col_map(const Buffer& b, int64_t N, int64_t C, int64_t H,
                                          int64_t W, int64_t SH, int64_t SW, int64_t PH, int64_t PW,
                                          int64_t OH, int64_t OW, int64_t pitch, int64_t swizzle,
                                          int64_t box_c, int64_t pixels);

// b as `rows` rows of C channels, `pitch` elements apart, boxes of box_c x box_rows: the
// flat tiles' view of an NHWC activation (its pixels are the rows) or of a [rows, C] matrix.
TensorMapEncode rows_map(const Buffer& b, int64_t rows, int64_t C, int64_t pitch, int64_t swizzle,
                         int64_t box_c, int64_t box_rows);

} // namespace kiln
