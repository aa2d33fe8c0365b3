// The Hopper families' main loop as the cost model sees it (cost/main_loop.hpp): TMA stages
// of 128-byte rows (k) of BM = 64 * consumers rows of A and BN rows of B, read by wgmma from
// swizzled shared memory. The forward conv (conv_wgmma.cpp) and the weight gradient
// (wgrad_wgmma.cpp) stage the same bytes per wgmma: only what a row means differs.
#pragma once

#include "generator/cost/main_loop.hpp"

namespace kiln {

// A cluster of m pixel tiles x n channel blocks (the template's CLUSTER_M, CLUSTER_N).
struct ClusterShape {
  int m = 1, n = 1;
  int size() const { return m * n; }
};

// In a cluster of cm pixel tiles x cn channel blocks (the template's CLUSTER_M, CLUSTER_N): each
// block requests 1 / cm of B's rows and 1 / cn of A's from L2 (the rest arrive by its peers'
// multicasts), while its shared memory still receives all of them.
MainLoop wgmma_main_loop(int consumers, int bn, int es, int stages, bool b_tf32, bool a_tf32,
                         int swizzle, ClusterShape cl);

// The clocks a tile's consumers spend in series with its wgmmas (measured, wgmma_loop.cpp):
// per swizzle row of k it reads (KBLOCKS' narrow rows each count) and for its epilogue's
// `output_bytes` (those the other consumer's wgmmas hide under ping-pong left out). A family
// spreads them over the tile's MMAs (MainLoop::serial_clocks_per_mma), with the tensor core at
// its peak.
double wgmma_tile_serial_clocks(double k_rows, double output_bytes);

} // namespace kiln
