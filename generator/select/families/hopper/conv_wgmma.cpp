// templates/conv/hopper/igemm_wgmma.cuh, seen from the generator.
#include "generator/select/families/hopper/conv_wgmma.hpp"

#include "generator/cost/main_loop.hpp"
#include "generator/cost/roofline.hpp"
#include "generator/select/epilogue.hpp"
#include "generator/select/families/conv/conv_geometry.hpp"
#include "generator/select/families/hopper/nhwc_maps.hpp"
#include "generator/select/families/hopper/wgmma_loop.hpp"
#include "generator/select/families/hopper/wgrad_wgmma.hpp"

#include <algorithm>
#include <fmt/format.h>

namespace kiln {

namespace {

// A pixel tile and its consumer warpgroups (TP * TQ = 64 per consumer); the wide ones for
// small feature maps (a tile covers one image's pixels only). `flat`: BM consecutive rows of
// the GEMM (the template's FLAT: 1x1 stride-1 unpadded convs and linear layers), whatever
// images they fall in. `rows`: tp whole output rows of all images' rows (ROW_TILES: strided
// 1x1 unpadded convs), tq the output's width, made per problem (row_tiles). `im2col`: BM
// consecutive rows of the GEMM as `flat`'s, for any conv, each tap's A one im2col-mode copy
// (the template's IM2COL): no pixel tile rounds the output up (a 14x14 map's 8x16 tiles
// compute 256 rows of its 196).
struct PixelTile {
  int tp, tq, consumers;
  bool flat = false, rows = false, im2col = false;
  bool gemm_rows() const { return flat || im2col; } // a tile is BM consecutive GEMM rows
};
constexpr PixelTile kPixelTiles[] = {{8, 16, 2},
                                     {16, 8, 2},
                                     {4, 32, 2},
                                     {32, 4, 2},
                                     {8, 8, 1},
                                     {4, 16, 1},
                                     {16, 4, 1},
                                     {1, 128, 2, true},
                                     {1, 64, 1, true},
                                     {1, 128, 2, false, false, true},
                                     {1, 64, 1, false, false, true}};
constexpr int kBns[] = {256, 128, 64};
// The template's ROW_TILES for a problem they serve (`ok`): per consumer count, as many whole
// output rows of width OW as a tile's 64 * consumers GEMM rows hold.
std::vector<PixelTile> row_tiles(bool ok, int64_t OW) {
  std::vector<PixelTile> r;
  if (ok)
    for (int c : {2, 1})
      if (OW <= 64 * c) r.push_back({int(64 * c / OW), int(OW), c, false, true});
  return r;
}
// The cluster a tile may run in besides alone: the largest of 2 x 2, 2 x 1, 1 x 2 its tiles
// pair up in; 1 x 1 where none.
ClusterShape largest_cluster(int64_t m_tiles, int64_t o_blocks, const PixelTile& pt,
                             int64_t sm_count) {
  // A row tile's A is one box, an im2col tile's one copy: not split over a cluster's row.
  const bool pair_m = m_tiles % 2 == 0,
             pair_n = o_blocks % 2 == 0 && !pt.rows && !pt.im2col && (pt.flat || pt.tp % 2 == 0);
  if (pair_m && pair_n && sm_count >= 4) return {2, 2};
  if (pair_m && sm_count >= 2) return {2, 1};
  if (pair_n && sm_count >= 2) return {1, 2};
  return {1, 1};
}
constexpr int kMaxStages = 4; // of 128-byte rows
// What keeps several k iterations a stage (KBLOCKS) from the price: measured on an H200
// (bench/results/h200_2026-11-28), 4 rows of 32 bytes a stage took 2-6% less time than a stage
// each, where the serial clocks the model prices per row (wgmma_loop.hpp) say the same: a
// sweep's alternative until one wins by more.
constexpr const char* kKBlocksUnmeasured =
    "several k iterations a stage: measured 2-6% faster than a stage each on an H200's stem, "
    "within the price's error";
// What the price of a clustered tile leaves out: every stage is released in lockstep with the
// blocks of its row and column, so the slowest of them (its epilogue, a late TMA) holds the
// others' producers. Measured on an H100 (bench/results/h100_2026-11-27), resnet50 f16 ran
// 2.09 ms at batch 32 and 10.95 ms at 256 with the clusters this model chose, 1.71 and 10.39
// ms without: until a model of that is measured, a cluster is chosen by measurement only.
constexpr const char* kClustersUnpriced =
    "thread-block clusters: resnet50 f16 on an H100 ran 0.82x (batch 32) and 0.95x (256) as "
    "fast with the clusters this cost model chose as without";

// What keeps im2col tiles from the price: the emulator runs their copies as the PTX ISA
// describes im2col mode, but no GPU has yet run one (the driver's cuTensorMapEncodeIm2col, the
// hardware's traversal of the bounding box): a sweep's alternative until one is checked and
// timed there (bench/gpu_session.sh's part im2col). Priced, they take every 3x3 conv of
// resnet50 f16 b256 on the h200, whose pixel tiles compute 12-23% idle rows.
constexpr const char* kIm2colUnmeasured =
    "im2col-mode TMA copies: run on the emulator, not yet on a GPU";

// The GEMM a step is, as the template's constants: a conv forward as it is, a linear layer
// (x [N, F], w [K, F]) as a 1x1 conv over 1x1 images, which only the flat tiles serve.
struct Problem {
  bool linear;
  int64_t N, C, H, W, O, KH, KW, SH, SW, PH, PW, OH, OW;
};

std::optional<Problem> problem_of(const StepInfo& s) {
  const Step& st = s.step;
  if (st.accumulate || s.cc() != 90) return std::nullopt;
  if (st.fn == Fn::linear_forward || st.fn == Fn::linear_forward_split) {
    const Shape &x = s.shape("x"), &w = s.shape("w");
    if (x.size() != 2 || w.size() != 2) return std::nullopt;
    return Problem{true, x[0], x[1], 1, 1, w[0], 1, 1, 1, 1, 0, 0, 1, 1};
  }
  if ((st.fn != Fn::conv2d_forward && st.fn != Fn::conv2d_forward_split) ||
      st.sparse.guard != Guard::none || st.arg("y_values") >= 0)
    return std::nullopt;
  const Attrs& a = st.attrs;
  if (a.groups != 1 || a.dilation[0] != 1 || a.dilation[1] != 1 || !padding_end_tag(a).empty())
    return std::nullopt;
  // Tensor maps read x as NHWC in place: an NCHW x (a network's input) would need a
  // conversion this family's price does not include.
  if (s.arg("x").layout != Layout::nhwc) return std::nullopt;
  const Shape &x = s.shape("x"), &w = s.shape("w"), &y = s.shape("y");
  if (x.size() != 4 || w.size() != 4 || y.size() != 4) return std::nullopt;
  return Problem{false, x[0],        x[1],        x[2],         x[3],         w[0], w[2],
                 w[3],  a.stride[0], a.stride[1], a.padding[0], a.padding[1], y[2], y[3]};
}

// What every variant of one step shares (candidates() below): the problem, its element size
// and math, the step's epilogue and pitches, the tags and bytes of its names and price.
struct Site {
  const StepInfo& s;
  Problem pr;
  DType t;
  Math math;
  int64_t es, x_pitch, y_pitch, M, K, smem_limit, swizzle;
  // Split-K in the kernel (conv2d.forward_split; generator/rewrite/split_k.cpp): the ranges
  // of k and the tile counters the plan gives (1 and 0 unsplit).
  int64_t slices, tickets;
  KernelEpilogue ep;
  bool flat_ok, rows_ok, b_tf32, a_tf32, y_tf32, staged, unrounded;
  std::string shape;
  double bytes;
};

std::optional<Site> site_of(const StepInfo& s) {
  const std::optional<Problem> pr = problem_of(s);
  if (!pr) return std::nullopt;
  const Step& st = s.step;
  const Buffer& xb = s.arg("x");
  const DType t = xb.dtype;
  if (t != DType::f16 && t != DType::bf16 && t != DType::f32) return std::nullopt;
  for (const Arg& arg : st.args)
    if (arg.role != "partial" && arg.role != "tickets" && s.plan.buffers[arg.buffer].dtype != t)
      return std::nullopt;
  // The slices: partial holds SPLIT of y (its first dimension SPLIT times y's), in fp32.
  const bool split = st.fn == Fn::conv2d_forward_split || st.fn == Fn::linear_forward_split;
  int64_t slices = 1, tickets = 0;
  if (split) {
    const Shape &part = s.shape("partial"), &y = s.shape("y");
    if (s.dtype("partial") != DType::f32 || s.dtype("tickets") != DType::i32 || part.empty() ||
        y.empty() || y[0] <= 0 || part[0] % y[0] != 0)
      return std::nullopt;
    slices = part[0] / y[0];
    tickets = numel(s.shape("tickets"));
    if (slices < 2) return std::nullopt;
  }
  const std::optional<Math> math = tensor_core_math(t, s.cc());
  if (!math) return std::nullopt;
  const auto [linear, N, C, H, W, O, KH, KW, SH, SW, PH, PW, OH, OW] = *pr;
  const bool flat_ok = KH == 1 && KW == 1 && SH == 1 && SW == 1 && PH == 0 && PW == 0;
  // ROW_TILES: a strided 1x1 unpadded conv whose images' rows make one strided sequence.
  const bool rows_ok =
      !linear && !flat_ok && KH == 1 && KW == 1 && PH == 0 && PW == 0 && H == SH * OH && OW <= 128;
  const int64_t es = int64_t(dtype_size(t));
  const int64_t swizzle = row_swizzle(C * es);
  if (swizzle == 0 || H < SH || W < SW || SH * SW > 9) return std::nullopt;
  // The template indexes with 32-bit ints.
  // y a channel window of a concat's output (Buffer::view_pitch): its pixels y_pitch apart.
  const int64_t y_pitch = linear ? 0 : s.arg("y").view_pitch;
  // x a channel window of a wider tensor (a channel slice as a view): its maps' strides are
  // its pitch (hopper_conv_maps); the kernel itself never forms an x address.
  const int64_t x_pitch = linear ? 0 : xb.view_pitch;
  if (std::max({xb.span_bytes() / es, numel(s.shape("w")), s.arg("y").span_bytes() / es}) >=
      (int64_t(1) << 31))
    return std::nullopt;
  const KernelEpilogue ep = epilogue_of(s);
  const int64_t M = N * OH * OW, K = KH * KW * C;
  // tf32 weights rounded once in the prepare phase, activations by their producer's epilogue
  // (Buffer::tf32): what arrives rounded is not rounded per stage; y rounded for its readers.
  const bool b_tf32 = es == 4 && s.arg("w").tf32, a_tf32 = es == 4 && s.arg("x").tf32;
  const bool y_tf32 = es == 4 && s.arg("y").tf32;
  const std::string shape = (linear ? fmt::format("n{}f{}k{}{}", N, C, O, ep.tag())
                                    : fmt::format("n{}c{}h{}w{}_o{}k{}x{}s{}x{}p{}x{}{}", N, C, H,
                                                  W, O, KH, KW, SH, SW, PH, PW, ep.tag()) +
                                          pitch_tag("x", x_pitch) + pitch_tag("y", y_pitch)) +
                            (split ? fmt::format("_split{}reduce", slices) : "");
  // Split: S slices written, S - 1 read by the tiles' last units (as the mma.sync family's).
  const double bytes = double((conv_family::x_elements_read(N, C, H, W, OH, OW, KH * KW) +
                               numel(s.shape("w")) + (ep.bias ? O : 0)) *
                              es) +
                       double(numel(s.shape("y")) * (ep.residual ? 2 : 1) * es) +
                       (split ? 4.0 * double((2 * slices - 1) * numel(s.shape("y"))) : 0.0);
  const int64_t smem_limit = s.gpu.shared_memory_per_block_optin;
  // The template's VECTOR_Y: its epilogue stages y through shared memory, 16 rows x 128 bytes
  // a warp (STAGING in conv/hopper/geometry.cuh).
  const bool staged = O % 8 == 0 && (y_pitch > 0 ? y_pitch : O) % 8 == 0;
  // No rounding pass in shared memory (f16, bf16, or tf32 operands that arrive rounded): the
  // ping-pong consumers and several k iterations a stage assume none.
  const bool unrounded = es == 2 || (a_tf32 && b_tf32);
  return Site{s,      *pr,        t,       *math,  es,        x_pitch, y_pitch, M,
              K,      smem_limit, swizzle, slices, tickets,   ep,      flat_ok, rows_ok,
              b_tf32, a_tf32,     y_tf32,  staged, unrounded, shape,   bytes};
}

// Folded taps (TAPS_ROW): a conv unpadded and of stride 1 across whose KW taps' channels make
// one 128-byte swizzle row (the space_to_depth stem's 4 taps x 16 f16 channels) reads that
// row, KW consecutive pixels of x, as one: a map whose columns are a pixel apart and whose
// rows are KW pixels wide (they overlap), the conv a KH x 1 one over KW * C channels. A stage
// then holds 4 times the k of a 32-byte row's.
struct Fold {
  int64_t taps, C, W, KW, PW, swizzle;
};
std::vector<Fold> folds_of(const Site& z) {
  const auto [linear, N, C, H, W, O, KH, KW, SH, SW, PH, PW, OH, OW] = z.pr;
  std::vector<Fold> folds = {{1, C, W, KW, PW, z.swizzle}};
  // (Stride 1 down too: the one map serves every tap row.)
  if (!linear && SH == 1 && SW == 1 && PW == 0 && KW > 1 && KW * C * z.es == 128 && z.x_pitch == 0)
    folds.push_back({KW, KW * C, OW, 1, 0, 128});
  return folds;
}

// Several k iterations a stage (KBLOCKS) where a narrow swizzle row brings a fraction of a
// 128-byte row's k: the most of them up to that fraction that divide the tile's k.
std::vector<int64_t> kblocks_of(const Site& z, const Fold& fo) {
  const int64_t k_iters = z.pr.KH * fo.KW * (fo.C * z.es / fo.swizzle);
  std::vector<int64_t> kbs = {1};
  for (int64_t d = 128 / fo.swizzle; d > 1 && z.unrounded; --d)
    if (k_iters % d == 0) {
      kbs.push_back(d);
      break;
    }
  return kbs;
}

// One point of the enumeration: how the taps are read, the tile, BN, in a cluster or alone,
// ping-pong consumers, k iterations a stage.
struct Choice {
  Fold fo;
  PixelTile pt;
  int bn;
  bool clustered, pp;
  int64_t kb;
};

// The variant of one choice; none where the choice does not serve the step or fit the SM.
std::optional<Variant> variant_of(const Site& z, const Choice& c, std::string_view family) {
  const StepInfo& s = z.s;
  const auto [linear, N, C, H, W, O, KH, KW, SH, SW, PH, PW, OH, OW] = z.pr;
  const auto& [fo, pt, bn, clustered, pp, kb] = c;
  const int64_t es = z.es, M = z.M, K = z.K, x_pitch = z.x_pitch, y_pitch = z.y_pitch;
  const int64_t smem_limit = z.smem_limit;
  const bool flat_ok = z.flat_ok, b_tf32 = z.b_tf32, a_tf32 = z.a_tf32, y_tf32 = z.y_tf32;
  const bool staged = z.staged, unrounded = z.unrounded;
  const DType t = z.t;
  const KernelEpilogue& ep = z.ep;
  const std::string& shape = z.shape;
  const double bytes = z.bytes;
  // A linear layer's 1x1 images fill a pixel tile's first row only.
  if (pt.flat ? !flat_ok : linear) return std::nullopt;
  // im2col: convs whose A a tiled box cannot read as rows (flat's serve the others), the
  // bounding box's corners in the driver's range (hopper_conv_maps).
  if (pt.im2col && (flat_ok || fo.taps > 1 ||
                    !im2col_map(s.arg("x"), N, C, H, W, SH, SW, PH, PW, OH, OW, C, 128, 64, 64)))
    return std::nullopt;
  if (kb > 1 && clustered) return std::nullopt;
  // Split-K in the kernel: alone, the consumers on one tile (the template's SPLIT); BN 256's
  // 128 accumulators a thread leave the split's state no registers (ptxas spilled tf32 ones,
  // with one consumer and with two: models_compile's 3x3 convs over 32x32 and 64x64 maps at
  // batch 1 on the h200).
  const int64_t S = z.slices;
  if (S > 1 && (clustered || pp || bn > 128)) return std::nullopt;
  // Ping-pong (PINGPONG): two consumers alone, a whole tile each in two 64 x BN
  // accumulators; 16-bit operands (no rounding pass to share).
  if (pp && (pt.consumers != 2 || clustered || bn > 128 || !unrounded)) return std::nullopt;
  if (fo.taps > 1 && (pt.flat || pt.rows || clustered)) return std::nullopt;
  if (bn > 64 && (O + bn / 2 - 1) / (bn / 2) <= 1) return std::nullopt; // half of it would do
  const int64_t bm = 64 * pt.consumers, stage = (bm + bn) * fo.swizzle * kb;
  // Per stage: the template's BARRIERS (a third where tf32 operands are rounded).
  const int64_t barriers = es == 4 && !(a_tf32 && b_tf32) ? 24 : 16;
  // Per warp 16 rows x 128 bytes; with a bias or residual two buffers, each with 128
  // bytes of bias (STAGING_PER_WARP).
  const bool loads = ep.bias || ep.residual;
  const int64_t staging = staged ? 4 * pt.consumers * (loads ? 2 * (16 * 128 + 128) : 16 * 128) : 0;
  // A narrower swizzle row brings less k a stage: as many more stages keep the same k
  // in flight (a 32-byte ring of 4 left a stem's stride-1 conv over 16 channels
  // latency-bound).
  const int64_t turns = pp ? 16 : 0; // PINGPONG's two barriers
  const int64_t stages =
      std::min<int64_t>(kMaxStages * 128 / (fo.swizzle * kb),
                        (smem_limit - 1024 - staging - turns) / (stage + barriers));
  if (stages < 2) return std::nullopt;
  const int64_t tiles_p = (OH + pt.tp - 1) / pt.tp, tiles_q = (OW + pt.tq - 1) / pt.tq;
  const int64_t m_tiles = pt.gemm_rows() ? (M + bm - 1) / bm
                          : pt.rows      ? (N * OH + pt.tp - 1) / pt.tp
                                         : N * tiles_p * tiles_q;
  const int64_t o_blocks = (O + bn - 1) / bn, tiles = m_tiles * o_blocks;
  // A stage of k per range at least, and a counter per consumer warp's rows of each tile.
  const int64_t k_stages = KH * fo.KW * (fo.C * es / fo.swizzle) / kb;
  if (S > 1 && (S > k_stages || tiles * 4 * pt.consumers > z.tickets)) return std::nullopt;
  // Clusters: the tiles of a pixel tile's channel blocks and a channel block's pixel
  // tiles share their operands by multicast, for loops L2 would starve (128 x 256 at
  // the tensor peak asks ~48 bytes per SM and clock of an H100's ~32; a 64-row tile,
  // 7x7 maps' 8x8, 80 with BN 256). The tiles must pair up.
  const ClusterShape cl =
      clustered ? largest_cluster(m_tiles, o_blocks, pt, s.gpu.sm_count) : ClusterShape{};
  if (clustered && cl.size() == 1) return std::nullopt;
  const int64_t threads = 128 * (1 + pt.consumers);
  Variant v;
  v.family = std::string(family);
  v.header = "conv/hopper/igemm_wgmma.cuh";
  v.function = "kiln::hopper_conv::conv_fwd";
  v.name =
      fmt::format("{}_hopper_wgmma_{}_{}_bn{}_s{}_c{}{}{}_{}{}_sm90a", linear ? "linear" : "conv2d",
                  dtype_tag(t),
                  pt.flat     ? std::string(linear ? "flat" : "nhwc_flat")
                  : pt.im2col ? std::string("nhwc_im2col")
                  : pt.rows   ? fmt::format("nhwc_rows{}x{}", pt.tp, pt.tq)
                              : fmt::format("nhwc_t{}x{}", pt.tp, pt.tq),
                  bn, stages, pt.consumers,
                  cl.size() > 1 ? fmt::format("_cl{}x{}", cl.m, cl.n) : "", pp ? "_pp" : "", shape,
                  fmt::format("{}{}{}{}{}{}", fo.taps > 1 ? fmt::format("_taps{}", fo.taps) : "",
                              fo.swizzle < 128 ? fmt::format("_w{}", fo.swizzle) : "",
                              kb > 1 ? fmt::format("_kb{}", kb) : "", a_tf32 ? "_xtf32" : "",
                              b_tf32 ? "_wtf32" : "", y_tf32 ? "_ytf32" : ""));
  cfg_type(v, "T", cpp_type(t));
  for (auto [k, val] : {std::pair{"N", N},
                        {"C", fo.C},
                        {"H", H},
                        {"W", fo.W},
                        {"O", O},
                        {"KH", KH},
                        {"KW", fo.KW},
                        {"SH", SH},
                        {"SW", SW},
                        {"PH", PH},
                        {"PW", fo.PW},
                        {"OH", OH},
                        {"OW", OW}})
    cfg_int(v, k, val);
  cfg_int(v, "TP", pt.tp);
  cfg_int(v, "TQ", pt.tq);
  cfg_int(v, "BN", bn);
  cfg_int(v, "STAGES", stages);
  cfg_int(v, "CONSUMERS", pt.consumers);
  if (cl.m > 1) cfg_int(v, "CLUSTER_M", cl.m);
  if (cl.n > 1) cfg_int(v, "CLUSTER_N", cl.n);
  cfg_bool(v, "B_TF32", b_tf32);
  if (a_tf32) cfg_bool(v, "A_TF32", true);
  if (y_tf32) cfg_bool(v, "Y_TF32", true);
  if (pt.flat) cfg_bool(v, "FLAT", true);
  if (pt.rows) cfg_bool(v, "ROW_TILES", true);
  if (pt.im2col) cfg_bool(v, "IM2COL", true);
  if (pp) cfg_bool(v, "PINGPONG", true);
  if (kb > 1) cfg_int(v, "KBLOCKS", kb);
  if (S > 1) cfg_int(v, "SPLIT", S);
  if (fo.swizzle < 128) cfg_int(v, "SWIZZLE", fo.swizzle);
  if (fo.taps > 1) cfg_int(v, "TAPS_ROW", fo.taps);
  cfg_pitch(v, "y", y_pitch);
  if (x_pitch > 0) v.pitched.push_back("x"); // in the maps, not the kernel's constants
  ep.cfg(v);
  for (int64_t m = 0; m < (pt.rows || pt.im2col ? 1 : SH * SW); ++m)
    v.args.push_back(fmt::format("xmap{}", m));
  v.args.insert(v.args.end(), {"wmap", "x", "w", "y"});
  ep.add_args(v);
  if (S > 1) v.args.insert(v.args.end(), {"partial", "tickets"});
  if (!linear) { // a linear layer's [N, F] operands have no layout
    v.layouts = {{"x", Layout::nhwc}, {"w", Layout::nhwc}, {"y", Layout::nhwc}};
    if (ep.residual) v.layouts.push_back({"residual", Layout::nhwc});
    if (S > 1) v.layouts.push_back({"partial", Layout::nhwc});
  }
  v.block = {threads, 1, 1};
  // Persistent: a block per SM (the ring and setmaxnreg's registers allow one), each
  // taking every SM-count-th tile, so the producer fills the next tile's stages while
  // the consumers store this one's; priced by its tiles' waves, which are the same. In
  // clusters: whole clusters, as many as the SMs hold. (The cuda backend launches no
  // more clusters than can be resident at once.)
  // With SPLIT the work units are the tiles' S ranges of k each.
  const int64_t cs = cl.size(), units = tiles * S;
  v.grid = {cs * std::min<int64_t>(units / cs, s.gpu.sm_count / cs), 1, 1};
  if (cs > 1) v.cluster = {cs, 1, 1};
  v.work_blocks = units;
  v.dynamic_smem = 1024 + stages * stage + staging + barriers * stages + turns;
  // __launch_bounds__(threads, 1) caps ptxas at the register file's share (168 for two
  // consumers); one consumer's kernels take the 232 setmaxnreg gives the consumers
  // (ptxas' report, NVRTC 13 for sm_90a).
  v.registers_per_thread = int(std::min<int64_t>(232, 65536 / threads / 8 * 8));
  v.flops = 2.0 * double(M) * double(O) * double(K);
  v.bytes = bytes;
  v.math = z.math;
  const double util = (pt.gemm_rows() || pt.rows ? double(M) / double(m_tiles * bm)
                                                 : double(OH) / double(tiles_p * pt.tp) *
                                                       double(OW) / double(tiles_q * pt.tq)) *
                      double(O) / double(o_blocks * bn);
  // A stage of KB rows as the loop's model sees it: one row of KB times the bytes.
  v.loop = wgmma_main_loop(pt.consumers, bn, int(es), int(stages), b_tf32, a_tf32,
                           int(fo.swizzle * kb), cl);
  // What a tile costs beyond its wgmmas, measured (wgmma_loop.hpp): its rows of k, and its
  // epilogue, which ping-pong hides under the other consumer's wgmmas but for each block's
  // last tile; in series with the wgmmas at the tensor peak, as the fit has them. What lies
  // outside the loop is in those clocks: the tiles' utilisation is all the efficiency keeps
  // (not kOutsideLoopEfficiency).
  // With SPLIT a unit's: 1 / S of the tile's k rows and mmas; its epilogue writes its fp32
  // slice, and one unit in S also reads the S - 1 others and stores y (each priced as the
  // fit's output bytes; unmeasured).
  const double tile_mmas = double(bm * bn) * double(K) * 2 / v.loop.mma_flops;
  const double epilogue_bytes =
      S > 1 ? double(bm * bn) * (4 + (4.0 * double(S - 1) + double(es)) / double(S))
            : double(bm * bn * es) / (pp ? std::ceil(double(tiles) / double(v.grid[0])) : 1);
  v.loop.peak_fraction = 1;
  v.loop.serial_clocks_per_mma =
      wgmma_tile_serial_clocks(double(K * es / fo.swizzle) / double(S), epilogue_bytes) /
      (tile_mmas / double(S));
  v.efficiency = util;
  if (cs > 1) v.measured_only = kClustersUnpriced;
  if (kb > 1) v.measured_only = kKBlocksUnmeasured;
  if (pt.im2col) v.measured_only = kIm2colUnmeasured;
  v.note = fmt::format(
      "{} M={} N={} K={} on wgmma m64n{}k{} {}: {}, {} consumer warpgroup(s){}, {} TMA "
      "stages of {} ({}-byte swizzle) row(s), {} x-map(s) + a w-map{}{}",
      linear ? "GEMM" : "implicit GEMM", M, O, K, bn, 32 / es, math_name(z.math),
      pt.flat     ? fmt::format("{}-row tile of x's rows", bm)
      : pt.im2col ? fmt::format("{}-pixel tile of all rows and images, a tap an im2col copy", bm)
      : pt.rows   ? fmt::format("tile of {} whole output rows ({} of its {} rows)", pt.tp,
                                pt.tp * pt.tq, bm)
                  : fmt::format("{}x{} pixel tile", pt.tp, pt.tq),
      pt.consumers,
      pp ? " taking turns, a whole tile each (ping-pong)"
      : S > 1
          ? fmt::format(" on {} ranges of k a tile, its last to finish adding them in order and "
                        "applying the epilogue (split-K)",
                        S)
          : "",
      stages, kb, fo.swizzle, pt.rows || pt.im2col ? 1 : SH * SW,
      es != 4            ? ""
      : a_tf32 && b_tf32 ? "; tf32 operands arrive rounded"
      : a_tf32           ? "; w rounded to tf32 in shared memory (x arrives rounded)"
      : b_tf32           ? "; x rounded to tf32 in shared memory (w arrives rounded)"
                         : "; operands rounded to tf32 in shared memory",
      cl.size() == 1 ? ""
      : cl.n == 1    ? "; clusters of 2 pixel tiles, the weight tile multicast"
      : cl.m == 1    ? "; clusters of 2 channel blocks, the x tile multicast"
                     : "; 2 x 2 clusters, both operand tiles multicast");
  return v;
}

} // namespace

bool is_hopper_conv(const Variant& v) {
  return v.family == "conv2d_hopper_wgmma" || is_hopper_wgrad(v);
}

std::string instance_arch(const Variant& v, const std::string& gpu_arch) {
  return is_hopper_conv(v) ? "sm_90a" : gpu_arch;
}

std::vector<Variant> HopperConvFamily::candidates(const StepInfo& s) const {
  const std::optional<Site> z = site_of(s);
  if (!z) return {};
  std::vector<Variant> out;
  for (const Fold& fo : folds_of(*z)) {
    std::vector<PixelTile> tiles_of(std::begin(kPixelTiles), std::end(kPixelTiles));
    for (const PixelTile& rt : row_tiles(z->rows_ok, z->pr.OW))
      tiles_of.push_back(rt);
    const std::vector<int64_t> kbs = kblocks_of(*z, fo);
    for (const PixelTile& pt : tiles_of)
      for (int bn : kBns)
        for (bool clustered : {false, true})
          for (bool pp : {false, true})
            for (int64_t kb : kbs)
              if (std::optional<Variant> v =
                      variant_of(*z, {fo, pt, bn, clustered, pp, kb}, name()))
                out.push_back(std::move(*v));
  }
  return out;
}

} // namespace kiln
