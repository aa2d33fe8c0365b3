// Instances of the Hopper implicit-GEMM conv (templates/conv/hopper/igemm_wgmma.cuh), each
// named by its configuration: dtype, pixel tile TPxTQ, BN, stages, consumer warpgroups.
// Host-compiled with the emulator for test_hopper_conv.cpp's emulator checks; the same text
// is compiled by NVRTC for sm_90a there (the census of its SASS).
#include "conv/hopper/igemm_wgmma.cuh"

using namespace kiln;

namespace {

// 3x3 pad 1 over 10x10 (partial pixel tiles), 64 -> 64 channels, bias + relu.
struct F16_T8x8_BN64_S3_C1 {
  using T = f16;
  static constexpr int N = 2, C = 64, H = 10, W = 10, O = 64, KH = 3, KW = 3, SH = 1, SW = 1,
                       PH = 1, PW = 1;
  static constexpr int OH = 10, OW = 10, TP = 8, TQ = 8, BN = 64, STAGES = 3, CONSUMERS = 1;
  static constexpr bool HAS_BIAS = true, HAS_RESIDUAL = false;
  static constexpr Act ACT = Act::relu;
};
// 1x1 over 6x9, 128 -> 128 channels, two consumer warpgroups, residual, no activation.
struct BF16_T8x16_BN128_S2_C2 {
  using T = bf16;
  static constexpr int N = 1, C = 128, H = 6, W = 9, O = 128, KH = 1, KW = 1, SH = 1, SW = 1,
                       PH = 0, PW = 0;
  static constexpr int OH = 6, OW = 9, TP = 8, TQ = 16, BN = 128, STAGES = 2, CONSUMERS = 2;
  static constexpr bool HAS_BIAS = false, HAS_RESIDUAL = true;
  static constexpr Act ACT = Act::none;
};
// 3x3 pad 1 over 5x7, 64 -> 96 channels (a partial BN tile), bias, residual and relu.
struct F16_T8x8_BN64_S4_C1 {
  using T = f16;
  static constexpr int N = 1, C = 64, H = 5, W = 7, O = 96, KH = 3, KW = 3, SH = 1, SW = 1, PH = 1,
                       PW = 1;
  static constexpr int OH = 5, OW = 7, TP = 8, TQ = 8, BN = 64, STAGES = 4, CONSUMERS = 1;
  static constexpr bool HAS_BIAS = true, HAS_RESIDUAL = true;
  static constexpr Act ACT = Act::relu;
};
// 3x3 pad 1 over 8x8, 64 -> 256 channels: wgmma N = 256, two consumers.
struct F16_T8x16_BN256_S2_C2 {
  using T = f16;
  static constexpr int N = 1, C = 64, H = 8, W = 8, O = 256, KH = 3, KW = 3, SH = 1, SW = 1, PH = 1,
                       PW = 1;
  static constexpr int OH = 8, OW = 8, TP = 8, TQ = 16, BN = 256, STAGES = 2, CONSUMERS = 2;
  static constexpr bool HAS_BIAS = true, HAS_RESIDUAL = false;
  static constexpr Act ACT = Act::none;
};

// 3x3 pad 1 over 9x6, 64 -> 128 channels in f32 (tf32 tensor cores), bias, residual, relu.
struct TF32_T8x8_BN128_S3_C1 {
  using T = float;
  static constexpr int N = 1, C = 64, H = 9, W = 6, O = 128, KH = 3, KW = 3, SH = 1, SW = 1, PH = 1,
                       PW = 1;
  static constexpr int OH = 9, OW = 6, TP = 8, TQ = 8, BN = 128, STAGES = 3, CONSUMERS = 1;
  static constexpr bool HAS_BIAS = true, HAS_RESIDUAL = true;
  static constexpr Act ACT = Act::relu;
};

// ResNet-50's layer-3 3x3 conv at batch 1 (14x14, 256 -> 256): the shape of a real layer.
struct F16_T8x16_BN128_S4_C2 {
  using T = f16;
  static constexpr int N = 1, C = 256, H = 14, W = 14, O = 256, KH = 3, KW = 3, SH = 1, SW = 1,
                       PH = 1, PW = 1;
  static constexpr int OH = 14, OW = 14, TP = 8, TQ = 16, BN = 128, STAGES = 4, CONSUMERS = 2;
  static constexpr bool HAS_BIAS = true, HAS_RESIDUAL = false;
  static constexpr Act ACT = Act::relu;
};

// Stride 2: ResNet's downsampling 3x3 (pad 1) over 13x11 and its 1x1 projection (pad 0).
struct F16_T8x8_BN64_S3_C1_STRIDE2 {
  using T = f16;
  static constexpr int N = 2, C = 64, H = 13, W = 11, O = 64, KH = 3, KW = 3, SH = 2, SW = 2,
                       PH = 1, PW = 1;
  static constexpr int OH = 7, OW = 6, TP = 8, TQ = 8, BN = 64, STAGES = 3, CONSUMERS = 1;
  static constexpr bool HAS_BIAS = true, HAS_RESIDUAL = true;
  static constexpr Act ACT = Act::relu;
};
struct BF16_T8x16_BN128_S2_C2_STRIDE2 {
  using T = bf16;
  static constexpr int N = 1, C = 128, H = 16, W = 16, O = 128, KH = 1, KW = 1, SH = 2, SW = 2,
                       PH = 0, PW = 0;
  static constexpr int OH = 8, OW = 8, TP = 8, TQ = 16, BN = 128, STAGES = 2, CONSUMERS = 2;
  static constexpr bool HAS_BIAS = false, HAS_RESIDUAL = false;
  static constexpr Act ACT = Act::none;
};

} // namespace

// 3x3 pad 1 over 10x12, 64 -> 64 channels in f32 with two consumers: each rounds its own
// A rows to tf32 behind its own barrier (the other's rows and B are not its to touch).
struct TF32_T8x16_BN64_S2_C2 {
  using T = float;
  static constexpr int N = 1, C = 64, H = 10, W = 12, O = 64, KH = 3, KW = 3, SH = 1, SW = 1,
                       PH = 1, PW = 1;
  static constexpr int OH = 10, OW = 12, TP = 8, TQ = 16, BN = 64, STAGES = 2, CONSUMERS = 2;
  static constexpr bool HAS_BIAS = true, HAS_RESIDUAL = false;
  static constexpr Act ACT = Act::relu;
};

// FLAT: x's rows are the GEMM's (a 1x1 stride-1 conv, a linear layer); conv_cases.hpp.
struct F16_FLAT_BN64_S3_C2 {
  using T = f16;
  static constexpr int N = 3, C = 64, H = 7, W = 7, O = 96, KH = 1, KW = 1, SH = 1, SW = 1, PH = 0,
                       PW = 0;
  static constexpr int OH = 7, OW = 7, TP = 1, TQ = 128, BN = 64, STAGES = 3, CONSUMERS = 2;
  static constexpr bool HAS_BIAS = true, HAS_RESIDUAL = true, FLAT = true;
  static constexpr Act ACT = Act::relu;
};
struct TF32_FLAT_BN64_S2_C1_LINEAR {
  using T = float;
  static constexpr int N = 70, C = 64, H = 1, W = 1, O = 40, KH = 1, KW = 1, SH = 1, SW = 1, PH = 0,
                       PW = 0;
  static constexpr int OH = 1, OW = 1, TP = 1, TQ = 64, BN = 64, STAGES = 2, CONSUMERS = 1;
  static constexpr bool HAS_BIAS = true, HAS_RESIDUAL = false, FLAT = true;
  static constexpr Act ACT = Act::none;
};
struct BF16_FLAT_BN256_S2_C1 {
  using T = bf16;
  static constexpr int N = 1, C = 128, H = 5, W = 9, O = 256, KH = 1, KW = 1, SH = 1, SW = 1,
                       PH = 0, PW = 0;
  static constexpr int OH = 5, OW = 9, TP = 1, TQ = 64, BN = 256, STAGES = 2, CONSUMERS = 1;
  static constexpr bool HAS_BIAS = false, HAS_RESIDUAL = false, FLAT = true;
  static constexpr Act ACT = Act::relu;
};

// The epilogue from registers (y's 8-channel groups not 16-byte aligned, Geometry::STAGED
// false): 20 channels as pairs, 21 one at a time; bias, residual, relu.
struct F16_T8x8_BN64_S2_C1_O20 {
  using T = f16;
  static constexpr int N = 2, C = 64, H = 6, W = 6, O = 20, KH = 3, KW = 3, SH = 1, SW = 1, PH = 1,
                       PW = 1;
  static constexpr int OH = 6, OW = 6, TP = 8, TQ = 8, BN = 64, STAGES = 2, CONSUMERS = 1;
  static constexpr bool HAS_BIAS = true, HAS_RESIDUAL = true;
  static constexpr Act ACT = Act::relu;
};
struct BF16_T8x8_BN64_S2_C1_O21 {
  using T = bf16;
  static constexpr int N = 1, C = 64, H = 5, W = 5, O = 21, KH = 3, KW = 3, SH = 1, SW = 1, PH = 1,
                       PW = 1;
  static constexpr int OH = 5, OW = 5, TP = 8, TQ = 8, BN = 64, STAGES = 2, CONSUMERS = 1;
  static constexpr bool HAS_BIAS = true, HAS_RESIDUAL = true;
  static constexpr Act ACT = Act::relu;
};
// SWIZZLE 32: 16 f16 channels (32 bytes) per k iteration; 3x3 over 7x7, bias, relu.
struct F16_T8x8_BN64_S3_C1_W32 {
  using T = f16;
  static constexpr int N = 2, C = 16, H = 7, W = 7, O = 64, KH = 3, KW = 3, SH = 1, SW = 1, PH = 1,
                       PW = 1;
  static constexpr int OH = 7, OW = 7, TP = 8, TQ = 8, BN = 64, STAGES = 3, CONSUMERS = 1,
                       SWIZZLE = 32;
  static constexpr bool HAS_BIAS = true, HAS_RESIDUAL = false;
  static constexpr Act ACT = Act::relu;
};
// A stem after space_to_depth (rewrite/space_to_depth_conv.hpp): 4x4 stride 1 pad 1 over 16
// f16 channels, 32-byte rows, 16 stages (a narrow row's ring holds 4x the stages of a 128-byte
// one); 17x17 -> 16x16, two images: each block's ring wraps within a tile.
struct F16_T8x16_BN64_S16_C2_W32_S2D {
  using T = f16;
  static constexpr int N = 2, C = 16, H = 17, W = 17, O = 64, KH = 4, KW = 4, SH = 1, SW = 1,
                       PH = 1, PW = 1;
  static constexpr int OH = 16, OW = 16, TP = 8, TQ = 16, BN = 64, STAGES = 16, CONSUMERS = 2,
                       SWIZZLE = 32;
  static constexpr bool HAS_BIAS = true, HAS_RESIDUAL = false;
  static constexpr Act ACT = Act::relu;
};
// SWIZZLE 64: 96 bf16 channels (192 bytes: three 64-byte rows), flat, two consumers, residual.
struct BF16_FLAT_BN128_S3_C2_W64 {
  using T = bf16;
  static constexpr int N = 2, C = 96, H = 6, W = 6, O = 128, KH = 1, KW = 1, SH = 1, SW = 1, PH = 0,
                       PW = 0;
  static constexpr int OH = 6, OW = 6, TP = 1, TQ = 128, BN = 128, STAGES = 3, CONSUMERS = 2,
                       SWIZZLE = 64;
  static constexpr bool HAS_BIAS = true, HAS_RESIDUAL = true, FLAT = true;
  static constexpr Act ACT = Act::none;
};
// SWIZZLE 64 in f32: 16 channels, the tf32 rounding pass over 64-byte rows.
struct TF32_T8x8_BN64_S2_C1_W64 {
  using T = float;
  static constexpr int N = 1, C = 16, H = 6, W = 5, O = 64, KH = 3, KW = 3, SH = 1, SW = 1, PH = 1,
                       PW = 1;
  static constexpr int OH = 6, OW = 5, TP = 8, TQ = 8, BN = 64, STAGES = 2, CONSUMERS = 1,
                       SWIZZLE = 64;
  static constexpr bool HAS_BIAS = true, HAS_RESIDUAL = true;
  static constexpr Act ACT = Act::relu;
};
// resnet50's layer1 1x1 convs with a residual (C = 64: one k iteration a tile, the time the
// epilogue's): BN 256 in four staged slices, their residual and bias by cp.async a slice
// ahead; O = 320 leaves the second channel block one slice, 10x10 pixels partial tiles.
struct F16_T8x8_BN256_S4_C1_K64 {
  using T = f16;
  static constexpr int N = 2, C = 64, H = 10, W = 10, O = 320, KH = 1, KW = 1, SH = 1, SW = 1,
                       PH = 0, PW = 0;
  static constexpr int OH = 10, OW = 10, TP = 8, TQ = 8, BN = 256, STAGES = 4, CONSUMERS = 1;
  static constexpr bool HAS_BIAS = true, HAS_RESIDUAL = true;
  static constexpr Act ACT = Act::relu;
};
// Clusters of two pixel tiles (CLUSTER_M): 3x3 pad 1 over 12x12, 64 -> 256 channels, two
// images: four pixel tiles (partial ones) in two pairs, each pair's weight tile multicast in
// halves; bias + relu.
struct F16_T8x16_BN256_S3_C2_CL2x1 {
  using T = f16;
  static constexpr int N = 2, C = 64, H = 12, W = 12, O = 256, KH = 3, KW = 3, SH = 1, SW = 1,
                       PH = 1, PW = 1;
  static constexpr int OH = 12, OW = 12, TP = 8, TQ = 16, BN = 256, STAGES = 3, CONSUMERS = 2;
  static constexpr int CLUSTER_M = 2;
  static constexpr bool HAS_BIAS = true, HAS_RESIDUAL = false;
  static constexpr Act ACT = Act::relu;
};
// 2 x 2 clusters (both operands multicast, each block bringing half of each): 3x3 pad 1 over
// 12x12, 64 -> 256 channels in two channel blocks of 128, two images; bias, residual, relu.
struct F16_T8x16_BN128_S3_C2_CL2x2 {
  using T = f16;
  static constexpr int N = 2, C = 64, H = 12, W = 12, O = 256, KH = 3, KW = 3, SH = 1, SW = 1,
                       PH = 1, PW = 1;
  static constexpr int OH = 12, OW = 12, TP = 8, TQ = 16, BN = 128, STAGES = 3, CONSUMERS = 2;
  static constexpr int CLUSTER_M = 2, CLUSTER_N = 2;
  static constexpr bool HAS_BIAS = true, HAS_RESIDUAL = true;
  static constexpr Act ACT = Act::relu;
};
// Clusters of two channel blocks (CLUSTER_N: A multicast, each block bringing 4 of the 8 pixel
// rows) through the stride-2 parity maps: 3x3 stride 2 pad 1 over 16x16, 64 -> 128 in bf16.
struct BF16_T8x8_BN64_S2_C1_CL1x2 {
  using T = bf16;
  static constexpr int N = 1, C = 64, H = 16, W = 16, O = 128, KH = 3, KW = 3, SH = 2, SW = 2,
                       PH = 1, PW = 1;
  static constexpr int OH = 8, OW = 8, TP = 8, TQ = 8, BN = 64, STAGES = 2, CONSUMERS = 1;
  static constexpr int CLUSTER_N = 2;
  static constexpr bool HAS_BIAS = true, HAS_RESIDUAL = false;
  static constexpr Act ACT = Act::none;
};
// 2 x 2 clusters in tf32 (each block rounds its copy of the multicast operands) over x's rows
// (FLAT, 7x7 images: rows of two images in a tile), 64 -> 192 channels (a partial channel
// block), residual, no activation.
struct TF32_FLAT_BN128_S2_C2_CL2x2 {
  using T = float;
  static constexpr int N = 4, C = 64, H = 7, W = 7, O = 192, KH = 1, KW = 1, SH = 1, SW = 1, PH = 0,
                       PW = 0;
  static constexpr int OH = 7, OW = 7, TP = 1, TQ = 128, BN = 128, STAGES = 2, CONSUMERS = 2;
  static constexpr int CLUSTER_M = 2, CLUSTER_N = 2;
  static constexpr bool FLAT = true;
  static constexpr bool HAS_BIAS = false, HAS_RESIDUAL = true;
  static constexpr Act ACT = Act::none;
};

// ROW_TILES: strided 1x1 downsamples, tiles of whole output rows across images (conv_cases.hpp).
// 14x14 -> 7x7 at batch 3: 21 rows in tiles of 9 (the last of 3), 192 channels (BN 128: a
// partial block), bias + relu.
struct F16_ROWS9x7_BN128_S3_C1 {
  using T = f16;
  static constexpr int N = 3, C = 64, H = 14, W = 14, O = 192, KH = 1, KW = 1, SH = 2, SW = 2,
                       PH = 0, PW = 0;
  static constexpr int OH = 7, OW = 7, TP = 9, TQ = 7, BN = 128, STAGES = 3, CONSUMERS = 1;
  static constexpr bool HAS_BIAS = true, HAS_RESIDUAL = false, ROW_TILES = true;
  static constexpr Act ACT = Act::relu;
};
// 28x27 -> 14x14 (an odd width), two consumers (9 rows of 14: 126 of 128), wgmma N = 256,
// residual.
struct BF16_ROWS9x14_BN256_S2_C2 {
  using T = bf16;
  static constexpr int N = 2, C = 128, H = 28, W = 27, O = 256, KH = 1, KW = 1, SH = 2, SW = 2,
                       PH = 0, PW = 0;
  static constexpr int OH = 14, OW = 14, TP = 9, TQ = 14, BN = 256, STAGES = 2, CONSUMERS = 2;
  static constexpr bool HAS_BIAS = false, HAS_RESIDUAL = true, ROW_TILES = true;
  static constexpr Act ACT = Act::none;
};
// tf32, stride 2 across and 1 down (H = OH): 4 rows of 14 a tile.
struct TF32_ROWS4x14_BN64_S2_C1 {
  using T = float;
  static constexpr int N = 2, C = 64, H = 6, W = 28, O = 64, KH = 1, KW = 1, SH = 1, SW = 2, PH = 0,
                       PW = 0;
  static constexpr int OH = 6, OW = 14, TP = 4, TQ = 14, BN = 64, STAGES = 2, CONSUMERS = 1;
  static constexpr bool HAS_BIAS = true, HAS_RESIDUAL = false, ROW_TILES = true;
  static constexpr Act ACT = Act::none;
};
// In a 2 x 1 cluster (the weight tile multicast): 14 rows of 7, two tiles of 9.
struct F16_ROWS9x7_BN64_S2_C1_CL2x1 {
  using T = f16;
  static constexpr int N = 2, C = 64, H = 14, W = 14, O = 128, KH = 1, KW = 1, SH = 2, SW = 2,
                       PH = 0, PW = 0;
  static constexpr int OH = 7, OW = 7, TP = 9, TQ = 7, BN = 64, STAGES = 2, CONSUMERS = 1;
  static constexpr int CLUSTER_M = 2;
  static constexpr bool HAS_BIAS = true, HAS_RESIDUAL = true, ROW_TILES = true;
  static constexpr Act ACT = Act::relu;
};

// PINGPONG: the consumers take turns, a whole 128-row tile each (two accumulators), their
// epilogues overlapping the other's wgmmas. 3x3 over 20x20 at batch 2, 64 -> 256 channels:
// 24 tiles (persistent blocks alternate their tiles between the consumers), bias + relu.
struct F16_T8x16_BN128_S4_C2_PP {
  using T = f16;
  static constexpr int N = 2, C = 64, H = 20, W = 20, O = 256, KH = 3, KW = 3, SH = 1, SW = 1,
                       PH = 1, PW = 1;
  static constexpr int OH = 20, OW = 20, TP = 8, TQ = 16, BN = 128, STAGES = 4, CONSUMERS = 2;
  static constexpr bool HAS_BIAS = true, HAS_RESIDUAL = false, PINGPONG = true;
  static constexpr Act ACT = Act::relu;
};
// Flat, bf16, 147 rows (a partial second tile), 128 -> 192 channels, residual.
struct BF16_FLAT_BN64_S3_C2_PP {
  using T = bf16;
  static constexpr int N = 3, C = 128, H = 7, W = 7, O = 192, KH = 1, KW = 1, SH = 1, SW = 1,
                       PH = 0, PW = 0;
  static constexpr int OH = 7, OW = 7, TP = 1, TQ = 128, BN = 64, STAGES = 3, CONSUMERS = 2;
  static constexpr bool HAS_BIAS = false, HAS_RESIDUAL = true, FLAT = true, PINGPONG = true;
  static constexpr Act ACT = Act::none;
};
// Row tiles of a strided 1x1 (28x28 -> 14x14, 9 rows of 14 a tile), bias + relu.
struct F16_ROWS9x14_BN128_S2_C2_PP {
  using T = f16;
  static constexpr int N = 2, C = 64, H = 28, W = 28, O = 128, KH = 1, KW = 1, SH = 2, SW = 2,
                       PH = 0, PW = 0;
  static constexpr int OH = 14, OW = 14, TP = 9, TQ = 14, BN = 128, STAGES = 2, CONSUMERS = 2;
  static constexpr bool HAS_BIAS = true, HAS_RESIDUAL = false, ROW_TILES = true, PINGPONG = true;
  static constexpr Act ACT = Act::relu;
};
// The space_to_depth stem's conv (32-byte rows, 16 stages: one tile's whole k in the ring).
struct F16_T8x16_BN64_S16_C2_W32_S2D_PP {
  using T = f16;
  static constexpr int N = 2, C = 16, H = 17, W = 17, O = 64, KH = 4, KW = 4, SH = 1, SW = 1,
                       PH = 1, PW = 1;
  static constexpr int OH = 16, OW = 16, TP = 8, TQ = 16, BN = 64, STAGES = 16, CONSUMERS = 2,
                       SWIZZLE = 32;
  static constexpr bool HAS_BIAS = true, HAS_RESIDUAL = false, PINGPONG = true;
  static constexpr Act ACT = Act::relu;
};
// 20 output channels (no 16-byte groups): the epilogue from registers; 3x3 over 9x9, batch 3.
struct F16_T8x16_BN64_S2_C2_PP_O20 {
  using T = f16;
  static constexpr int N = 3, C = 64, H = 9, W = 9, O = 20, KH = 3, KW = 3, SH = 1, SW = 1, PH = 1,
                       PW = 1;
  static constexpr int OH = 9, OW = 9, TP = 8, TQ = 16, BN = 64, STAGES = 2, CONSUMERS = 2;
  static constexpr bool HAS_BIAS = true, HAS_RESIDUAL = true, PINGPONG = true;
  static constexpr Act ACT = Act::relu;
};

// KBLOCKS: several k iterations a stage. The stem's conv with 4 of its 32-byte rows a stage (a
// 128-byte row's k), alone and ping-pong; row tiles of a 2-iteration k (the zeroed rows of
// each block).
struct F16_T8x16_BN64_S4_C2_W32_S2D_KB4 {
  using T = f16;
  static constexpr int N = 2, C = 16, H = 17, W = 17, O = 64, KH = 4, KW = 4, SH = 1, SW = 1,
                       PH = 1, PW = 1;
  static constexpr int OH = 16, OW = 16, TP = 8, TQ = 16, BN = 64, STAGES = 4, CONSUMERS = 2,
                       SWIZZLE = 32, KBLOCKS = 4;
  static constexpr bool HAS_BIAS = true, HAS_RESIDUAL = false;
  static constexpr Act ACT = Act::relu;
};
struct F16_T8x16_BN64_S3_C2_W32_S2D_KB4_PP {
  using T = f16;
  static constexpr int N = 2, C = 16, H = 17, W = 17, O = 64, KH = 4, KW = 4, SH = 1, SW = 1,
                       PH = 1, PW = 1;
  static constexpr int OH = 16, OW = 16, TP = 8, TQ = 16, BN = 64, STAGES = 3, CONSUMERS = 2,
                       SWIZZLE = 32, KBLOCKS = 4;
  static constexpr bool HAS_BIAS = true, HAS_RESIDUAL = true, PINGPONG = true;
  static constexpr Act ACT = Act::relu;
};
struct F16_ROWS9x7_BN64_S2_C1_KB2 {
  using T = f16;
  static constexpr int N = 3, C = 128, H = 14, W = 14, O = 64, KH = 1, KW = 1, SH = 2, SW = 2,
                       PH = 0, PW = 0;
  static constexpr int OH = 7, OW = 7, TP = 9, TQ = 7, BN = 64, STAGES = 2, CONSUMERS = 1,
                       KBLOCKS = 2;
  static constexpr bool HAS_BIAS = true, HAS_RESIDUAL = false, ROW_TILES = true;
  static constexpr Act ACT = Act::relu;
};

// As KILN_KERNEL (one block per SM: setmaxnreg needs that register cap at entry), with
// __global__ so that the emulated library, built with hidden visibility, exports it.
// IM2COL: tiles of GEMM rows, each tap's A one im2col copy (geometry.cuh).
struct F16_I2C_BN64_S3_C1 {
  using T = f16;
  static constexpr int N = 2, C = 64, H = 10, W = 10, O = 64, KH = 3, KW = 3, SH = 1, SW = 1,
                       PH = 1, PW = 1;
  static constexpr int OH = 10, OW = 10, TP = 1, TQ = 64, BN = 64, STAGES = 3, CONSUMERS = 1;
  static constexpr bool HAS_BIAS = true, HAS_RESIDUAL = false, IM2COL = true;
  static constexpr Act ACT = Act::relu;
};
struct BF16_I2C_BN128_S3_C2_STRIDE2 {
  using T = bf16;
  static constexpr int N = 2, C = 128, H = 13, W = 11, O = 128, KH = 3, KW = 3, SH = 2, SW = 2,
                       PH = 1, PW = 1;
  static constexpr int OH = 7, OW = 6, TP = 1, TQ = 128, BN = 128, STAGES = 3, CONSUMERS = 2;
  static constexpr bool HAS_BIAS = false, HAS_RESIDUAL = true, IM2COL = true;
  static constexpr Act ACT = Act::none;
};
struct F16_I2C_BN128_S4_C2_PP {
  using T = f16;
  static constexpr int N = 3, C = 64, H = 14, W = 14, O = 256, KH = 3, KW = 3, SH = 1, SW = 1,
                       PH = 1, PW = 1;
  static constexpr int OH = 14, OW = 14, TP = 1, TQ = 128, BN = 128, STAGES = 4, CONSUMERS = 2;
  static constexpr bool HAS_BIAS = true, HAS_RESIDUAL = false, IM2COL = true, PINGPONG = true;
  static constexpr Act ACT = Act::relu;
};
struct TF32_I2C_BN64_S2_C1 {
  using T = float;
  static constexpr int N = 1, C = 64, H = 9, W = 6, O = 64, KH = 3, KW = 3, SH = 1, SW = 1, PH = 1,
                       PW = 1;
  static constexpr int OH = 9, OW = 6, TP = 1, TQ = 64, BN = 64, STAGES = 2, CONSUMERS = 1;
  static constexpr bool HAS_BIAS = true, HAS_RESIDUAL = true, IM2COL = true;
  static constexpr Act ACT = Act::relu;
};
struct F16_I2C_BN64_S2_C1_K3x1 {
  using T = f16;
  static constexpr int N = 2, C = 64, H = 9, W = 7, O = 64, KH = 3, KW = 1, SH = 1, SW = 2, PH = 1,
                       PW = 0;
  static constexpr int OH = 9, OW = 4, TP = 1, TQ = 64, BN = 64, STAGES = 2, CONSUMERS = 1;
  static constexpr bool HAS_BIAS = true, HAS_RESIDUAL = false, IM2COL = true;
  static constexpr Act ACT = Act::none;
};
struct F16_I2C_BN64_S2_C1_CL2x1 {
  using T = f16;
  static constexpr int N = 4, C = 64, H = 14, W = 14, O = 128, KH = 1, KW = 1, SH = 2, SW = 2,
                       PH = 0, PW = 0;
  static constexpr int OH = 7, OW = 7, TP = 1, TQ = 64, BN = 64, STAGES = 2, CONSUMERS = 1,
                       CLUSTER_M = 2;
  static constexpr bool HAS_BIAS = true, HAS_RESIDUAL = false, IM2COL = true;
  static constexpr Act ACT = Act::none;
};

#define KILN_HOPPER_CONV(Cfg)                                                                      \
  extern "C" __global__ void __launch_bounds__(hopper_conv::Geometry<Cfg>::THREADS, 1)             \
      conv_hopper_##Cfg(KernelArgs args) {                                                         \
    hopper_conv::conv_fwd<Cfg>(args);                                                              \
  }
#define KILN_HOPPER_CONV_CLUSTER(Cfg, cx)                                                          \
  extern "C" __global__ void __launch_bounds__(hopper_conv::Geometry<Cfg>::THREADS, 1)             \
      __cluster_dims__(cx, 1, 1) conv_hopper_##Cfg(KernelArgs args) {                              \
    hopper_conv::conv_fwd<Cfg>(args);                                                              \
  }
KILN_HOPPER_CONV(F16_T8x8_BN64_S3_C1)
KILN_HOPPER_CONV(BF16_T8x16_BN128_S2_C2)
KILN_HOPPER_CONV(F16_T8x8_BN64_S4_C1)
KILN_HOPPER_CONV(F16_T8x16_BN256_S2_C2)
KILN_HOPPER_CONV(TF32_T8x8_BN128_S3_C1)
KILN_HOPPER_CONV(F16_T8x16_BN128_S4_C2)
KILN_HOPPER_CONV(F16_T8x8_BN64_S3_C1_STRIDE2)
KILN_HOPPER_CONV(BF16_T8x16_BN128_S2_C2_STRIDE2)
KILN_HOPPER_CONV(TF32_T8x16_BN64_S2_C2)
KILN_HOPPER_CONV(F16_FLAT_BN64_S3_C2)
KILN_HOPPER_CONV(TF32_FLAT_BN64_S2_C1_LINEAR)
KILN_HOPPER_CONV(BF16_FLAT_BN256_S2_C1)
KILN_HOPPER_CONV(F16_T8x8_BN64_S2_C1_O20)
KILN_HOPPER_CONV(BF16_T8x8_BN64_S2_C1_O21)
KILN_HOPPER_CONV(F16_T8x8_BN64_S3_C1_W32)
KILN_HOPPER_CONV(F16_T8x16_BN64_S16_C2_W32_S2D)
KILN_HOPPER_CONV(BF16_FLAT_BN128_S3_C2_W64)
KILN_HOPPER_CONV(TF32_T8x8_BN64_S2_C1_W64)
KILN_HOPPER_CONV(F16_T8x8_BN256_S4_C1_K64)
KILN_HOPPER_CONV_CLUSTER(F16_T8x16_BN256_S3_C2_CL2x1, 2)
KILN_HOPPER_CONV_CLUSTER(F16_T8x16_BN128_S3_C2_CL2x2, 4)
KILN_HOPPER_CONV_CLUSTER(BF16_T8x8_BN64_S2_C1_CL1x2, 2)
KILN_HOPPER_CONV_CLUSTER(TF32_FLAT_BN128_S2_C2_CL2x2, 4)
KILN_HOPPER_CONV(F16_ROWS9x7_BN128_S3_C1)
KILN_HOPPER_CONV(BF16_ROWS9x14_BN256_S2_C2)
KILN_HOPPER_CONV(TF32_ROWS4x14_BN64_S2_C1)
KILN_HOPPER_CONV_CLUSTER(F16_ROWS9x7_BN64_S2_C1_CL2x1, 2)
KILN_HOPPER_CONV(F16_T8x16_BN128_S4_C2_PP)
KILN_HOPPER_CONV(BF16_FLAT_BN64_S3_C2_PP)
KILN_HOPPER_CONV(F16_ROWS9x14_BN128_S2_C2_PP)
KILN_HOPPER_CONV(F16_T8x16_BN64_S16_C2_W32_S2D_PP)
KILN_HOPPER_CONV(F16_T8x16_BN64_S2_C2_PP_O20)
KILN_HOPPER_CONV(F16_T8x16_BN64_S4_C2_W32_S2D_KB4)
KILN_HOPPER_CONV(F16_T8x16_BN64_S3_C2_W32_S2D_KB4_PP)
KILN_HOPPER_CONV(F16_ROWS9x7_BN64_S2_C1_KB2)
KILN_HOPPER_CONV(F16_I2C_BN64_S3_C1)
KILN_HOPPER_CONV(BF16_I2C_BN128_S3_C2_STRIDE2)
KILN_HOPPER_CONV(F16_I2C_BN128_S4_C2_PP)
KILN_HOPPER_CONV(TF32_I2C_BN64_S2_C1)
KILN_HOPPER_CONV(F16_I2C_BN64_S2_C1_K3x1)
KILN_HOPPER_CONV_CLUSTER(F16_I2C_BN64_S2_C1_CL2x1, 2)
