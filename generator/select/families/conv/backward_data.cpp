// templates/conv/backward_data.cuh seen from the generator: conv2d.backward_data, and
// conv_transpose2d.forward, the same gather with x as dy, y as dx and the bias added.
#include "generator/select/families/conv/conv_families.hpp"
#include "generator/select/families/conv/conv_geometry.hpp"
#include "runtime/ops/conv_transpose2d.hpp"

#include <fmt/format.h>
#include <numeric>
#include <set>
#include <utility>

namespace kiln {

using namespace conv_family;

std::vector<Variant> ConvBackwardDataFamily::candidates(const StepInfo& s) const {
  const Step& st = s.step;
  const bool transpose = st.fn == Fn::conv_transpose2d_forward;
  if ((st.fn != Fn::conv2d_backward_data && !transpose) || !uniform_storage(s)) return {};
  if (transpose && st.accumulate) return {};
  // The roles of the gather: dy (read), w, dx (written), [b].
  const char* dy_role = transpose ? "x" : "dy";
  const char* dx_role = transpose ? "y" : "dx";
  const bool bias = transpose && st.arg("b") >= 0;
  // Either layout, dy and dx alike (a transposed conv's x and y; a training step's
  // gradients in an NHWC training plan); w OIHW.
  if (s.layout("w") != Layout::nchw) return {};
  const ConvGeom g = conv_geom(transpose ? transposed_conv(st.attrs, s.shape("x")[1]) : st.attrs,
                               s.shape(dx_role), s.shape(dy_role));
  const DType t = s.dtype(dy_role);
  const int64_t esize = int64_t(dtype_size(t));
  const int64_t Cg = g.Cg(), Og = g.Og(), KK = g.KK();

  std::vector<Variant> out;
  std::set<std::string> names;
  // Stride phases (see the template): each phase of dx is a stride-1 correlation of dy with
  // the taps that reach it, count_h x count_w of them at most, `spread` dy rows apart.
  const auto taps = [](int64_t k, int64_t s, int64_t d) {
    const int64_t step = s / std::gcd(s, d);
    return std::pair<int64_t, int64_t>{(k + step - 1) / step, d / std::gcd(s, d)};
  };
  const auto [count_h, spread_h] = taps(g.KH, g.SH, g.DH);
  const auto [count_w, spread_w] = taps(g.KW, g.SW, g.DW);
  const int64_t phase_h = (g.H + g.SH - 1) / g.SH, phase_w = (g.W + g.SW - 1) / g.SW;
  // The layouts offered: the plan's (x, y alike), and NCHW besides (a plan of mixed layouts
  // converts around it where the model prefers).
  std::vector<bool> layouts = {false};
  if (s.layout(dy_role) == Layout::nhwc) layouts.insert(layouts.begin(), true);
  for (bool nhwc : layouts)
    for (ImageTile tile : kImageTiles) {
      const auto per_chan = [&](const ImageTile& u) {
        return (u.th + (count_h - 1) * spread_h) * (u.tw + (count_w - 1) * spread_w) + KK * u.tc;
      };
      if (!fit_image_tile(tile, phase_h, phase_w, Cg, Og, per_chan)) continue;
      Variant v;
      v.family = "conv2d_backward_data";
      v.header = "conv/backward_data.cuh";
      v.function = "kiln::conv::backward_data";
      v.name = fmt::format(
          "{}_{}_{}_{}{}{}_{}_t{}_{}", transpose ? "conv_transpose2d" : "conv2d_backward_data",
          dtype_tag(t), nhwc ? "nhwc" : "nchw", geom_name(g), st.accumulate ? "_acc" : "",
          bias ? "_bias" : "", tile_name(tile, 'c', 'o'), tile.threads(), s.arch_tag());
      if (!names.insert(v.name).second) continue;
      cfg_type(v, "T", cpp_type(t));
      cfg_geom(v, g);
      cfg_bool(v, "ACCUMULATE", st.accumulate);
      cfg_int(v, "TH", tile.th);
      cfg_int(v, "TW", tile.tw);
      cfg_int(v, "TC", tile.tc);
      cfg_int(v, "OK", tile.ck);
      cfg_int(v, "P", tile.p);
      cfg_int(v, "PC", tile.pc);
      cfg_int(v, "THREADS", tile.threads());
      if (transpose) cfg_bool(v, "BIAS", bias);
      if (nhwc) cfg_bool(v, "NHWC", true);
      v.args = {dy_role, "w", dx_role};
      if (bias) v.args.push_back("b");
      const int64_t tiles =
          g.SH * g.SW * ((phase_h + tile.th - 1) / tile.th) * ((phase_w + tile.tw - 1) / tile.tw);
      const int64_t ctiles = (Cg + tile.tc - 1) / tile.tc;
      v.grid = {tiles, g.G * ctiles, g.N};
      v.block = {tile.threads(), 1, 1};
      v.static_smem = per_chan(tile) * tile.ck * 4;
      v.registers_per_thread = int(36 + tile.p * tile.pc + tile.pc + tile.p);
      const double dx_elems = double(g.N * g.C * g.H * g.W);
      // Each phase reads about all of dy, once per channel tile.
      v.bytes =
          dram_reads(s.gpu, double(esize * g.N * g.O * g.OH * g.OW), double(ctiles * g.SH * g.SW)) +
          double(esize) * (double(g.O * Cg * KK) + dx_elems * (st.accumulate ? 2 : 1));
      v.flops = 2 * g.macs();
      // Measured on the H100 (bench/results/h100_2026-11-27, ncu of resnet50 f16 b32 training
      // steps): the NCHW step's 52 ran 24.4 ms for the 10.9 priced by the micro-tile alone
      // (2.24x), the channels-last step's 6 strided ones 6.2 ms for 1.9 (3.22x).
      v.efficiency = 0.4 * micro_tile_efficiency(tile.p, tile.pc) *
                     tile_utilization(tile, phase_h, phase_w, Cg, Og);
      v.math = Math::fp32;
      v.note = fmt::format("{}gather by stride phase: {}x{} pixels of one phase x {} channels per "
                           "block, {} dy channels staged per step, {}x{} outputs per thread",
                           transpose ? "a transposed conv as its conv's data gradient: " : "",
                           tile.th, tile.tw, tile.tc, tile.ck, tile.p, tile.pc);
      const Layout io = nhwc ? Layout::nhwc : Layout::nchw;
      v.layouts = {{dy_role, io}, {"w", Layout::nchw}, {dx_role, io}};
      out.push_back(std::move(v));
    }
  drop_underfilled(out, s.gpu);
  return out;
}

} // namespace kiln
