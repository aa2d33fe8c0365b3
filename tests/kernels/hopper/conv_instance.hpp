// One Hopper conv instance as data: shapes, tile, epilogue (conv_instances.cpp names each).
#pragma once

namespace hopper_test {

struct Instance {
  const char* name;
  int dtype; // 0 f16, 1 bf16, 2 f32 (tf32 on the tensor cores)
  int N, C, H, W, O, KH, KW, SH, SW, PH, PW, TP, TQ, BN, STAGES, CONSUMERS;
  bool bias, residual, relu;
  bool flat = false;                // FLAT: x's rows are the GEMM's (TP 1, TQ = 64 * CONSUMERS)
  int swizzle = 128;                // SWIZZLE: the bytes of channels a k iteration brings
  int cluster_m = 1, cluster_n = 1; // CLUSTER_M x CLUSTER_N blocks a cluster, operands multicast
  bool row_tiles = false;           // ROW_TILES: TP whole output rows of all images' rows (TQ = OW)
  bool pingpong = false;            // PINGPONG: the two consumers take turns, a whole tile each
  int kblocks = 1;                  // KBLOCKS: k iterations (swizzle rows) a stage
  bool im2col = false;              // IM2COL: tiles of GEMM rows, each tap an im2col copy
  int cluster() const { return cluster_m * cluster_n; }
};

} // namespace hopper_test
