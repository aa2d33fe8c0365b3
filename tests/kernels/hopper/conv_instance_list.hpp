// The Hopper conv instances of conv_instances.cpp as data (conv_cases.hpp's Instance), one
// entry per instance, in its order.
#pragma once

#include "tests/kernels/hopper/conv_instance.hpp"

namespace hopper_test {

// As conv_instances.cpp declares them, a row each (conv_instance.hpp's fields in order): name,
// dtype (0 f16, 1 bf16, 2 f32 as tf32), N, C, H, W, O, KH, KW, SH, SW, PH, PW, TP, TQ, BN,
// STAGES, CONSUMERS, bias, residual, relu, and where they differ from their defaults flat,
// swizzle, cluster_m, cluster_n, row_tiles, pingpong, kblocks, im2col.
// clang-format off
const Instance kInstances[] = {
    {"F16_T8x8_BN64_S3_C1",            0,   2,  64,  10,  10,  64,   3,   3,   1,   1,   1,   1,   8,   8,  64,   3,   1, true, false, true},
    {"BF16_T8x16_BN128_S2_C2",         1,   1, 128,   6,   9, 128,   1,   1,   1,   1,   0,   0,   8,  16, 128,   2,   2, false, true, false},
    {"F16_T8x8_BN64_S4_C1",            0,   1,  64,   5,   7,  96,   3,   3,   1,   1,   1,   1,   8,   8,  64,   4,   1, true, true, true},
    {"F16_T8x16_BN256_S2_C2",          0,   1,  64,   8,   8, 256,   3,   3,   1,   1,   1,   1,   8,  16, 256,   2,   2, true, false, false},
    {"TF32_T8x8_BN128_S3_C1",          2,   1,  64,   9,   6, 128,   3,   3,   1,   1,   1,   1,   8,   8, 128,   3,   1, true, true, true},
    {"F16_T8x16_BN128_S4_C2",          0,   1, 256,  14,  14, 256,   3,   3,   1,   1,   1,   1,   8,  16, 128,   4,   2, true, false, true},
    {"F16_T8x8_BN64_S3_C1_STRIDE2",    0,   2,  64,  13,  11,  64,   3,   3,   2,   2,   1,   1,   8,   8,  64,   3,   1, true, true, true},
    {"BF16_T8x16_BN128_S2_C2_STRIDE2", 1,   1, 128,  16,  16, 128,   1,   1,   2,   2,   0,   0,   8,  16, 128,   2,   2, false, false, false},
    {"TF32_T8x16_BN64_S2_C2",          2,   1,  64,  10,  12,  64,   3,   3,   1,   1,   1,   1,   8,  16,  64,   2,   2, true, false, true},
    // FLAT: a 1x1 over 7x7 at batch 3 (147 rows: a partial second tile), 64 -> 96 channels.
    {"F16_FLAT_BN64_S3_C2",            0,   3,  64,   7,   7,  96,   1,   1,   1,   1,   0,   0,   1, 128,  64,   3,   2, true, true, true, true},
    // FLAT: a linear layer in f32 (tf32): 70 rows of 64 features -> 40.
    {"TF32_FLAT_BN64_S2_C1_LINEAR",    2,  70,  64,   1,   1,  40,   1,   1,   1,   1,   0,   0,   1,  64,  64,   2,   1, true, false, false, true},
    // FLAT: bf16, wgmma N = 256 with one consumer, 45 rows.
    {"BF16_FLAT_BN256_S2_C1",          1,   1, 128,   5,   9, 256,   1,   1,   1,   1,   0,   0,   1,  64, 256,   2,   1, false, false, true, true},
    {"F16_T8x8_BN64_S2_C1_O20",        0,   2,  64,   6,   6,  20,   3,   3,   1,   1,   1,   1,   8,   8,  64,   2,   1, true, true, true},
    {"BF16_T8x8_BN64_S2_C1_O21",       1,   1,  64,   5,   5,  21,   3,   3,   1,   1,   1,   1,   8,   8,  64,   2,   1, true, true, true},
    // SWIZZLE 64 and 32: channels whose bytes are not a multiple of 128 (mobile nets).
    {"F16_T8x8_BN64_S3_C1_W32",        0,   2,  16,   7,   7,  64,   3,   3,   1,   1,   1,   1,   8,   8,  64,   3,   1, true, false, true, false, 32},
    {"F16_T8x16_BN64_S16_C2_W32_S2D",  0,   2,  16,  17,  17,  64,   4,   4,   1,   1,   1,   1,   8,  16,  64,  16,   2, true, false, true, false, 32},
    {"BF16_FLAT_BN128_S3_C2_W64",      1,   2,  96,   6,   6, 128,   1,   1,   1,   1,   0,   0,   1, 128, 128,   3,   2, true, true, false, true, 64},
    {"TF32_T8x8_BN64_S2_C1_W64",       2,   1,  16,   6,   5,  64,   3,   3,   1,   1,   1,   1,   8,   8,  64,   2,   1, true, true, true, false, 64},
    {"F16_T8x8_BN256_S4_C1_K64",       0,   2,  64,  10,  10, 320,   1,   1,   1,   1,   0,   0,   8,   8, 256,   4,   1, true, true, true},
    {"F16_T8x16_BN256_S3_C2_CL2x1",    0,   2,  64,  12,  12, 256,   3,   3,   1,   1,   1,   1,   8,  16, 256,   3,   2, true, false, true, false, 128, 2, 1},
    {"F16_T8x16_BN128_S3_C2_CL2x2",    0,   2,  64,  12,  12, 256,   3,   3,   1,   1,   1,   1,   8,  16, 128,   3,   2, true, true, true, false, 128, 2, 2},
    {"BF16_T8x8_BN64_S2_C1_CL1x2",     1,   1,  64,  16,  16, 128,   3,   3,   2,   2,   1,   1,   8,   8,  64,   2,   1, true, false, false, false, 128, 1, 2},
    {"TF32_FLAT_BN128_S2_C2_CL2x2",    2,   4,  64,   7,   7, 192,   1,   1,   1,   1,   0,   0,   1, 128, 128,   2,   2, false, true, false, true, 128, 2, 2},
    // ROW_TILES: 14x14 -> 7x7 at batch 3, rows in tiles of 9, bias + relu.
    {"F16_ROWS9x7_BN128_S3_C1",        0,   3,  64,  14,  14, 192,   1,   1,   2,   2,   0,   0,   9,   7, 128,   3,   1, true, false, true, false, 128, 1, 1, true},
    // ROW_TILES: 28x27 -> 14x14, two consumers, residual.
    {"BF16_ROWS9x14_BN256_S2_C2",      1,   2, 128,  28,  27, 256,   1,   1,   2,   2,   0,   0,   9,  14, 256,   2,   2, false, true, false, false, 128, 1, 1, true},
    // ROW_TILES: tf32, stride 1 down and 2 across.
    {"TF32_ROWS4x14_BN64_S2_C1",       2,   2,  64,   6,  28,  64,   1,   1,   1,   2,   0,   0,   4,  14,  64,   2,   1, true, false, false, false, 128, 1, 1, true},
    // ROW_TILES in a 2 x 1 cluster.
    {"F16_ROWS9x7_BN64_S2_C1_CL2x1",   0,   2,  64,  14,  14, 128,   1,   1,   2,   2,   0,   0,   9,   7,  64,   2,   1, true, true, true, false, 128, 2, 1, true},
    // PINGPONG: the consumers take turns, a whole tile each.
    {"F16_T8x16_BN128_S4_C2_PP",       0,   2,  64,  20,  20, 256,   3,   3,   1,   1,   1,   1,   8,  16, 128,   4,   2, true, false, true, false, 128, 1, 1, false, true},
    {"BF16_FLAT_BN64_S3_C2_PP",        1,   3, 128,   7,   7, 192,   1,   1,   1,   1,   0,   0,   1, 128,  64,   3,   2, false, true, false, true, 128, 1, 1, false, true},
    {"F16_ROWS9x14_BN128_S2_C2_PP",    0,   2,  64,  28,  28, 128,   1,   1,   2,   2,   0,   0,   9,  14, 128,   2,   2, true, false, true, false, 128, 1, 1, true, true},
    {"F16_T8x16_BN64_S16_C2_W32_S2D_PP", 0, 2,  16,  17,  17,  64,   4,   4,   1,   1,   1,   1,   8,  16,  64,  16,   2, true, false, true, false, 32, 1, 1, false, true},
    {"F16_T8x16_BN64_S2_C2_PP_O20",    0,   3,  64,   9,   9,  20,   3,   3,   1,   1,   1,   1,   8,  16,  64,   2,   2, true, true, true, false, 128, 1, 1, false, true},
    // KBLOCKS: k iterations a stage.
    {"F16_T8x16_BN64_S4_C2_W32_S2D_KB4", 0, 2,  16,  17,  17,  64,   4,   4,   1,   1,   1,   1,   8,  16,  64,   4,   2, true, false, true, false, 32, 1, 1, false, false, 4},
    {"F16_T8x16_BN64_S3_C2_W32_S2D_KB4_PP", 0, 2, 16, 17,  17,  64,   4,   4,   1,   1,   1,   1,   8,  16,  64,   3,   2, true, true, true, false, 32, 1, 1, false, true, 4},
    {"F16_ROWS9x7_BN64_S2_C1_KB2",     0,   3, 128,  14,  14,  64,   1,   1,   2,   2,   0,   0,   9,   7,  64,   2,   1, true, false, true, false, 128, 1, 1, true, false, 2},
    // IM2COL: tiles of GEMM rows, a tap's A one im2col copy. 3x3 pad 1 over 10x10 at batch 2
    // (200 rows: four 64-row tiles, the last partial, across the images).
    {"F16_I2C_BN64_S3_C1",             0,   2,  64,  10,  10,  64,   3,   3,   1,   1,   1,   1,   1,  64,  64,   3,   1, true, false, true, false, 128, 1, 1, false, false, 1, true},
    // IM2COL, stride 2 over 13x11 (odd: the last taps' rows past the image), residual.
    {"BF16_I2C_BN128_S3_C2_STRIDE2",   1,   2, 128,  13,  11, 128,   3,   3,   2,   2,   1,   1,   1, 128, 128,   3,   2, false, true, false, false, 128, 1, 1, false, false, 1, true},
    // IM2COL with ping-pong consumers: 3x3 over 14x14 at batch 3 (588 rows: 5 tiles).
    {"F16_I2C_BN128_S4_C2_PP",         0,   3,  64,  14,  14, 256,   3,   3,   1,   1,   1,   1,   1, 128, 128,   4,   2, true, false, true, false, 128, 1, 1, false, true, 1, true},
    // IM2COL in tf32.
    {"TF32_I2C_BN64_S2_C1",            2,   1,  64,   9,   6,  64,   3,   3,   1,   1,   1,   1,   1,  64,  64,   2,   1, true, true, true, false, 128, 1, 1, false, false, 1, true},
    // IM2COL, a 3x1 filter, stride 1 down and 2 across, padding down only: the offsets and
    // the bounding box's corners W first, the traversal strides per dimension.
    {"F16_I2C_BN64_S2_C1_K3x1",        0,   2,  64,   9,   7,  64,   3,   1,   1,   2,   1,   0,   1,  64,  64,   2,   1, true, false, false, false, 128, 1, 1, false, false, 1, true},
    // IM2COL, a strided 1x1 (a downsample) in a 2 x 1 cluster (the weights multicast).
    {"F16_I2C_BN64_S2_C1_CL2x1",       0,   4,  64,  14,  14, 128,   1,   1,   2,   2,   0,   0,   1,  64,  64,   2,   1, true, false, false, false, 128, 2, 1, false, false, 1, true},
};
// clang-format on

} // namespace hopper_test
