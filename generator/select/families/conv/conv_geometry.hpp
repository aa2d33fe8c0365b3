// What the conv group's families share: a convolution's geometry read from a step, the
// shape part of instance names, its cfg constants, and the tile fitting of the direct
// (forward) and gather (backward data) kernels, which tile an image the same way.
#pragma once

#include "generator/select/family.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace kiln::conv_family {

struct ConvGeom {
  int64_t N, C, H, W; // input (x, dx)
  int64_t O, OH, OW;  // output (y, dy)
  int64_t KH, KW, SH, SW, PH, PW, DH, DW, G;
  int64_t Cg() const { return C / G; }
  int64_t Og() const { return O / G; }
  int64_t KK() const { return KH * KW; }
  // Multiply-accumulates of the convolution.
  double macs() const { return double(N) * double(O) * double(OH * OW) * double(Cg() * KK()); }
};

// x (or dx) [N, C, H, W] and y (or dy) [N, O, OH, OW] with the step's attributes.
ConvGeom conv_geom(const Attrs& a, const Shape& x, const Shape& y);

// "n2c16h7w9o32_k3x3s1x1p1x1d1x1g1"
std::string geom_name(const ConvGeom& g);

// N, C, H, W, O, OH, OW, KH, KW, SH, SW, PH, PW, DH, DW, G.
void cfg_geom(Variant& v, const ConvGeom& g);

// Every float argument of the step has one dtype, not f64 (the kernels' storage types).
bool uniform_storage(const StepInfo& s);

// A side of a sparse dispatch (Step::guard): the GUARD and THRESHOLD cfg constants of the
// templates that test it (false and 0 for an unguarded step), and the name's tag
// ("_gd<threshold>" on the dense side, "_gs<threshold>" on the sparse side, empty when
// unguarded). Each family serves one side; the template knows which it is.
void cfg_guard(Variant& v, const Step& st);
std::string guard_tag(const Step& st);

// The compacted form of y a conv epilogue writes as it writes y (conv/tile_epilogue.cuh), when
// the step has y_values: its slice size and whether it counts y's nonzeros into y_nnz.
struct OutputForm {
  bool compact = false;
  int64_t ycs = 0;
  bool count = false;

  explicit OutputForm(const StepInfo& s);
  // Whether a block tile of `to` channels (of og per group, in `groups` groups) holds whole
  // slices of the form, as the epilogue needs.
  bool fits(int64_t to, int64_t og, int64_t groups) const;
  void cfg(Variant& v) const;      // COMPACT, YCS, YCOUNT
  void add_args(Variant& v) const; // y_values, y_index, y_count, [y_nnz], after y
  std::string tag() const;         // "_ycs32c": in instance names
  int64_t smem(int64_t th, int64_t tw, int64_t to) const; // the staged tile, bytes
  // The bytes the form adds at output density d: nonzero values and index bytes, counts.
  double bytes(double y_elems, int64_t esize, double d) const;
};

inline int64_t pow2_at_least(int64_t x) {
  int64_t p = 1;
  while (p < x)
    p *= 2;
  return p;
}

// Threads per block are powers of two from 32 to kMaxBlock: whole warps, and NVRTC's ptxas
// squeezes registers (and spills) for some other block sizes.
inline constexpr int64_t kMaxBlock = 256;

// A block tile of an image-shaped output: TH x TW pixels and TC channels of one group,
// P pixels x PC channels per thread, CK reduction channels staged per step. The threads
// form NP pixel groups x TC / PC channel groups, both powers of two.
struct ImageTile {
  int64_t th, tw, tc, p, pc, ck;
  int64_t np() const { return std::max(pow2_at_least((th * tw + p - 1) / p), 32 / (tc / pc)); }
  int64_t threads() const { return np() * (tc / pc); }
};

// The configurations offered (before fitting): {TH, TW, TC, P, PC}.
inline constexpr ImageTile kImageTiles[] = {
    {8, 8, 16, 2, 4, 0},  // balanced
    {8, 16, 32, 4, 4, 0}, // wide in channels: most reuse per shared-memory load
    {16, 16, 8, 4, 2, 0}, // large images, few channels
    {4, 8, 64, 1, 8, 0},  // small late-layer images, many channels
};

// Fits a tile to an output of out_h x out_w pixels and `chans` channels per group: clamps
// it; makes the channel groups a power of two (PC shrinks before TC pads); keeps
// at least a warp of pixel groups where the tile allows and at most kMaxBlock threads (P
// grows). `per_chan_floats(tile)` is the shared floats one staged reduction channel needs,
// `reduce` the reduction channels; CK is what fits a 16 KiB target (one channel up to
// 48 KiB). Returns false when not even one channel fits.
template <class PerChan>
bool fit_image_tile(ImageTile& t, int64_t out_h, int64_t out_w, int64_t chans, int64_t reduce,
                    PerChan per_chan_floats) {
  t.th = std::min(t.th, out_h);
  t.tw = std::min(t.tw, out_w);
  const int64_t tc = std::min(t.tc, chans);
  const int64_t groups = pow2_at_least((tc + std::min(t.pc, tc) - 1) / std::min(t.pc, tc));
  t.pc = (tc + groups - 1) / groups;
  t.tc = groups * t.pc;
  t.p = std::max<int64_t>(1, std::min(t.p, t.th * t.tw / 32));
  while (t.threads() > kMaxBlock)
    ++t.p;
  const int64_t per = per_chan_floats(t) * 4;
  if (per > 48 * 1024) return false;
  t.ck = std::max<int64_t>(1, std::min({reduce, int64_t(16), int64_t(16 * 1024) / per}));
  return true;
}

// "t8x8o16c8_p2x4": the tile's pixels, its channels (letter `chan`) and the reduction
// channels staged per step (letter `staged`); pixels x channels per thread.
std::string tile_name(const ImageTile& t, char chan, char staged);

// The fraction of the block's multiply-adds that produce results (edge tiles, channel
// padding, pixel groups past the tile and the last staged chunk do work that is dropped).
double tile_utilization(const ImageTile& t, int64_t out_h, int64_t out_w, int64_t chans,
                        int64_t reduce);

// The elements of x a convolution's taps touch: every pixel, but fewer where the stride skips
// some that no tap reaches (a 1x1 stride-2 conv reads one pixel in four).
inline int64_t x_elements_read(int64_t N, int64_t C, int64_t H, int64_t W, int64_t OH, int64_t OW,
                               int64_t taps) {
  return N * C * std::min(H * W, OH * OW * taps);
}

// DRAM bytes of a tensor of `bytes` that the blocks read `reads` times over: once when it
// fits comfortably in L2 (the other reads hit there), every time otherwise.
double dram_reads(const GpuDesc& gpu, double bytes, double reads);

// Drops the configurations whose grids leave most of the GPU idle while another fills it:
// those with fewer than half of min(SM count, the largest grid offered) blocks, when their
// work is more than a microsecond of the whole GPU (below that, launch overhead rules). The
// cost model floors the fill at 2%, which would make a 2-block grid look as good as a
// 30-block one; these families reduce whole tiles per block and cannot spread otherwise.
void drop_underfilled(std::vector<Variant>& variants, const GpuDesc& gpu);

// Efficiency of a P x PC register tile fed from shared memory: FMAs per shared load.
double micro_tile_efficiency(int64_t p, int64_t pc);

} // namespace kiln::conv_family
