// templates/conv/hopper/wgrad_wgmma.cuh, seen from the generator.
#include "generator/select/families/hopper/wgrad_wgmma.hpp"

#include "generator/select/families/conv/conv_geometry.hpp"
#include "generator/select/families/hopper/nhwc_maps.hpp"
#include "generator/select/families/hopper/wgmma_loop.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

namespace kiln {

using namespace conv_family;

namespace {

// A tile of 64 output positions: TP x TQ pixels of one image, or 64 consecutive positions
// of the flat view (1x1 stride-1 unpadded convs).
struct PositionTile {
  int tp, tq;
  bool flat = false;
};
constexpr PositionTile kTiles[] = {{8, 8}, {4, 16}, {16, 4}, {2, 32}, {1, 64, true}};
constexpr int kBns[] = {256, 128, 64};
constexpr int kMaxStages = 4; // of 64 positions: as much k in flight as the forward ring

// The tiles the template's slices run (wgrad_wgmma.cuh, slice_of): flat, each slice's
// positions in 64s from its first; pixel tiles, every band of TP output rows a slice reaches.
int64_t slice_tiles(const ConvGeom& g, const PositionTile& pt, int64_t slices) {
  const int64_t R = g.N * g.OH * g.OW, tiles_p = (g.OH + pt.tp - 1) / pt.tp;
  const int64_t tiles_q = (g.OW + pt.tq - 1) / pt.tq;
  const auto band = [&](int64_t pos) {
    return pos / (g.OH * g.OW) * tiles_p + pos / g.OW % g.OH / pt.tp;
  };
  int64_t total = 0;
  for (int64_t s = 0; s < slices; ++s) {
    const int64_t b = s * R / slices, e = (s + 1) * R / slices;
    total += pt.flat ? (e - b + 63) / 64 : (band(e - 1) - band(b) + 1) * tiles_q;
  }
  return total;
}

} // namespace

bool is_hopper_wgrad(const Variant& v) { return v.family == "conv2d_backward_weight_hopper_wgmma"; }

std::vector<Variant> HopperWgradFamily::candidates(const StepInfo& s) const {
  const Step& st = s.step;
  if (st.fn != Fn::conv2d_backward_weight || st.sparse.guard != Guard::none || st.accumulate ||
      s.cc() != 90)
    return {};
  const bool partial = s.has("partial");
  if (partial == s.has("dw") || s.layout("x") != Layout::nhwc || s.layout("dy") != Layout::nhwc)
    return {};
  const char* out = partial ? "partial" : "dw";
  const DType t = s.dtype("x");
  if ((t != DType::f16 && t != DType::bf16) || s.dtype("dy") != t ||
      s.dtype(out) != (partial ? DType::f32 : t) || s.layout(out) != Layout::nchw)
    return {};
  // The maps read x and dy in place, whole pixels apart: no channel windows.
  if (s.arg("x").view_pitch > 0 || s.arg("dy").view_pitch > 0) return {};
  const std::optional<Math> math = tensor_core_math(t, s.cc());
  if (!math) return {};
  const Attrs& a = st.attrs;
  const ConvGeom g = conv_geom(a, s.shape("x"), s.shape("dy"));
  if (g.G != 1 || g.DH != 1 || g.DW != 1 || !padding_end_tag(a).empty() || g.C % 64 != 0 ||
      g.O % 64 != 0 || g.H < g.SH || g.W < g.SW || g.SH * g.SW > 9)
    return {};
  const int64_t es = int64_t(dtype_size(t)), slices = partial ? s.shape("partial")[0] : 1;
  const int64_t positions = g.N * g.OH * g.OW, KK = g.KK();
  if (std::max({numel(s.shape("x")), positions * g.O, slices * g.O * g.C * KK}) >=
      (int64_t(1) << 31))
    return {};
  const bool flat_ok = KK == 1 && g.SH == 1 && g.SW == 1 && g.PH == 0 && g.PW == 0;
  const int64_t smem_limit = s.gpu.shared_memory_per_block_optin;
  std::vector<Variant> variants;
  for (const PositionTile& pt : kTiles)
    for (int bn : kBns)
      for (int consumers : {2, 1}) {
        // Flat tiles where the conv allows them, beside one pixel tile (the flat ones are full).
        if (pt.flat ? !flat_ok : flat_ok && (pt.tp != 8 || pt.tq != 8)) continue;
        if (g.C % bn != 0 || g.O % (64 * consumers) != 0) continue;
        const int64_t bm = 64 * consumers, stage = (bm + bn) * 128;
        const int64_t stages = std::min<int64_t>(kMaxStages, (smem_limit - 1024) / (stage + 16));
        if (stages < 2) continue;
        const int64_t tiles = slice_tiles(g, pt, slices); // over all slices
        const int64_t threads = 128 * (1 + consumers);
        Variant v;
        v.family = std::string(name());
        v.header = "conv/hopper/wgrad_wgmma.cuh";
        v.function = "kiln::hopper_wgrad::wgrad";
        v.name = fmt::format(
            "conv2d_backward_weight_hopper_wgmma_{}_{}_bn{}_s{}_c{}_{}_x{}{}_sm90a", dtype_tag(t),
            pt.flat ? std::string("nhwc_flat") : fmt::format("nhwc_t{}x{}", pt.tp, pt.tq), bn,
            stages, consumers, geom_name(g), slices, partial ? "_partial" : "");
        cfg_type(v, "T", cpp_type(t));
        for (auto [k, val] : {std::pair{"N", g.N},
                              {"C", g.C},
                              {"H", g.H},
                              {"W", g.W},
                              {"O", g.O},
                              {"KH", g.KH},
                              {"KW", g.KW},
                              {"SH", g.SH},
                              {"SW", g.SW},
                              {"PH", g.PH},
                              {"PW", g.PW},
                              {"OH", g.OH},
                              {"OW", g.OW}})
          cfg_int(v, k, val);
        cfg_int(v, "TP", pt.tp);
        cfg_int(v, "TQ", pt.tq);
        if (pt.flat) cfg_bool(v, "FLAT", true);
        cfg_int(v, "BN", bn);
        cfg_int(v, "CONSUMERS", consumers);
        cfg_int(v, "STAGES", stages);
        cfg_int(v, "SLICES", slices);
        cfg_bool(v, "PARTIAL", partial);
        const int64_t maps = pt.flat ? 1 : g.SH * g.SW;
        for (int64_t m = 0; m < maps; ++m)
          v.args.push_back(fmt::format("xmap{}", m));
        v.args.insert(v.args.end(), {"dymap", "x", "dy", out});
        v.layouts = {{"x", Layout::nhwc}, {"dy", Layout::nhwc}, {out, Layout::nchw}};
        const int64_t o_blocks = g.O / bm, c_blocks = g.C / bn;
        v.grid = {c_blocks * KK, o_blocks, slices};
        v.block = {threads, 1, 1};
        v.dynamic_smem = 1024 + stages * stage + 16 * stages + 8 * consumers;
        // As the forward family's: setmaxnreg gives the consumers 232, __launch_bounds__
        // caps ptxas at the register file's share.
        v.registers_per_thread = int(std::min<int64_t>(232, 65536 / threads / 8 * 8));
        // The blocks of a slice (every channel block, tap and dy block) run its positions at
        // once, the grid's slices last: L2 serves the blocks of one wave the same tiles, which
        // DRAM gives once per wave of them. x: the pixels the taps read (a strided 1x1 conv
        // reads 1 / (SH * SW) of them). Each slice writes its tile of dw.
        const double waves = std::ceil(double(c_blocks * KK * o_blocks) / double(s.gpu.sm_count));
        const double x_read = double(es * x_elements_read(g.N, g.C, g.H, g.W, g.OH, g.OW, KK));
        v.bytes = (double(es * positions * g.O) + x_read) * waves +
                  double(g.O * g.C * KK) * (partial ? 4.0 * double(slices) : double(es));
        v.flops = 2 * g.macs();
        v.math = *math;
        // A stage is (BM + BN) rows of 128 bytes of k, as the forward kernel's: the same loop.
        v.loop = wgmma_main_loop(consumers, bn, int(es), int(stages), false, false, 128, {});
        // But writing dw itself a consumer drains its wgmmas every stage (the template says
        // why): alone, the tensor cores idle for the drain and the next stage's barrier wait,
        // about 100 of a stage's 256 (BN 64) to 1024 (BN 256) clocks; a second consumer's
        // wgmmas fill them. Stated, not measured.
        if (consumers == 1 && !partial)
          v.loop.peak_fraction *= 1024.0 / (1024.0 + 100.0 * 256 / bn);
        // Tiles past the image's edge, and the rows of a slice's boundary tiles that lie in
        // its neighbours' (zeroed, computed all the same).
        const double util = double(positions) / double(tiles * 64);
        // A slice fills its ring before its first wgmma and drains it after its last: with few
        // tiles a block, that is a share of its time the loop's price leaves out.
        const double per_block = double(tiles) / double(slices);
        v.efficiency = kOutsideLoopEfficiency * util * per_block / (per_block + 1);
        v.note = fmt::format(
            "dw = dy^T x as a GEMM M={} N={} K={} positions on wgmma m64n{}k16 {} (both operands "
            "MN-major): {}, {} consumer warpgroup(s), {} TMA stages, {} slice{}, {} tiles in all",
            g.O, g.C * KK, positions, bn, math_name(*math),
            pt.flat ? std::string("64-position flat tiles")
                    : fmt::format("{}x{} pixel tiles", pt.tp, pt.tq),
            consumers, stages, slices, slices == 1 ? "" : "s", tiles);
        variants.push_back(std::move(v));
      }
  return variants;
}

std::vector<std::pair<std::string, TensorMapEncode>>
hopper_wgrad_maps(const Variant& v, const Plan& p, const Step& s) {
  const Buffer& xb = p.buffers[s.need("x")];
  const Buffer& dyb = p.buffers[s.need("dy")];
  const int64_t N = cfg_int_of(v, "N"), C = cfg_int_of(v, "C"), H = cfg_int_of(v, "H"),
                W = cfg_int_of(v, "W"), O = cfg_int_of(v, "O"), OH = cfg_int_of(v, "OH"),
                OW = cfg_int_of(v, "OW");
  const int64_t box_c = 128 / int64_t(dtype_size(xb.dtype)); // one 128-byte swizzle row
  std::vector<std::pair<std::string, TensorMapEncode>> maps;
  if (cfg_bool_of(v, "FLAT")) {
    maps.push_back({"xmap0", rows_map(xb, N * H * W, C, C, 128, box_c, 64)});
    maps.push_back({"dymap", rows_map(dyb, N * OH * OW, O, O, 128, box_c, 64)});
    return maps;
  }
  const int64_t tq = cfg_int_of(v, "TQ"), tp = cfg_int_of(v, "TP");
  std::vector<TensorMapEncode> xs =
      parity_maps(xb, N, C, H, W, cfg_int_of(v, "SH"), cfg_int_of(v, "SW"), C, 128, box_c, tq, tp);
  for (size_t i = 0; i < xs.size(); ++i)
    maps.push_back({fmt::format("xmap{}", i), std::move(xs[i])});
  maps.push_back({"dymap", parity_maps(dyb, N, O, OH, OW, 1, 1, O, 128, box_c, tq, tp)[0]});
  return maps;
}

} // namespace kiln
