// templates/conv/depthwise.cuh seen from the generator: conv2d.forward with one filter per
// channel (groups == C == O), any kernel, stride, padding and dilation, NCHW or NHWC.
#include "generator/select/epilogue.hpp"
#include "generator/select/families/conv/conv_families.hpp"
#include "generator/select/families/conv/conv_geometry.hpp"

#include <fmt/format.h>
#include <set>

namespace kiln {

using namespace conv_family;

namespace {

// Block shapes: output tile rows x columns, channels, pixels per thread. Channel-wide
// tiles suit NHWC (a warp's lanes are channels), pixel-wide ones NCHW and few channels.
struct DwTile {
  int64_t th, tw, tc, p;
};
constexpr DwTile kDwTiles[] = {
    {8, 8, 32, 4}, {4, 8, 64, 4}, {8, 16, 16, 4}, {16, 16, 4, 4}, {8, 8, 8, 2}};

} // namespace

std::vector<Variant> ConvDepthwiseFamily::candidates(const StepInfo& s) const {
  const Step& st = s.step;
  const Attrs& at = st.attrs;
  if (st.fn != Fn::conv2d_forward || st.accumulate || st.sparse.guard != Guard::none ||
      !uniform_storage(s))
    return {};
  const Shape& xs = s.shape("x");
  const Shape& ys = s.shape("y");
  if (at.groups != xs[1] || ys[1] != xs[1] || at.groups < 2) return {};
  const OutputForm form(s);
  if (form.compact) return {};
  const Layout lay = s.layout("y"), xlay = s.layout("x");
  const KernelEpilogue ep = epilogue_of(s);
  if (ep.residual && s.layout("residual") != lay) return {};
  const ConvGeom g = conv_geom(at, xs, ys);
  const DType t = s.dtype("x");
  const int64_t esize = int64_t(dtype_size(t));

  std::vector<Variant> out;
  std::set<std::string> names;
  for (DwTile tile : kDwTiles) {
    tile.th = std::min(tile.th, g.OH);
    tile.tw = std::min(tile.tw, g.OW);
    tile.tc = std::min(tile.tc, pow2_at_least(g.C));
    const int64_t np = (tile.th * tile.tw + tile.p - 1) / tile.p;
    const int64_t threads = np * tile.tc;
    if (threads < 32 || threads > 1024 || threads % 32) continue;
    const int64_t ih = (tile.th - 1) * g.SH + (g.KH - 1) * g.DH + 1;
    const int64_t iw = (tile.tw - 1) * g.SW + (g.KW - 1) * g.DW + 1;
    const int64_t smem = ih * iw * tile.tc * 4;
    if (smem > 48 * 1024 || g.KH * g.KW > 64) continue;
    Variant v;
    v.family = "conv2d_depthwise";
    v.header = "conv/depthwise.cuh";
    v.function = "kiln::conv::depthwise";
    v.name = fmt::format("conv2d_depthwise_{}_{}{}_{}{}_t{}x{}c{}_p{}_t{}_{}", dtype_tag(t),
                         layout_name(lay),
                         xlay != lay ? fmt::format("_x{}", layout_name(xlay)) : "", geom_name(g),
                         ep.tag(), tile.th, tile.tw, tile.tc, tile.p, threads, s.arch_tag());
    if (!names.insert(v.name).second) continue;
    cfg_type(v, "T", cpp_type(t));
    cfg_geom(v, g);
    cfg_bool(v, "NHWC", lay == Layout::nhwc);
    cfg_bool(v, "X_NHWC", xlay == Layout::nhwc);
    ep.cfg(v);
    cfg_int(v, "TH", tile.th);
    cfg_int(v, "TW", tile.tw);
    cfg_int(v, "TC", tile.tc);
    cfg_int(v, "P", tile.p);
    cfg_int(v, "THREADS", threads);
    v.args = {"x", "w"};
    ep.add_args(v);
    v.args.push_back("y");
    const int64_t tiles = ((g.OH + tile.th - 1) / tile.th) * ((g.OW + tile.tw - 1) / tile.tw);
    const int64_t ctiles = (g.C + tile.tc - 1) / tile.tc;
    v.grid = {tiles, ctiles, g.N};
    v.block = {threads, 1, 1};
    v.static_smem = smem;
    v.registers_per_thread = int(24 + g.KH * g.KW + tile.p);
    // Memory-bound: x read once plus the halo each tile re-reads, y written once, the
    // residual read once, weights and bias once.
    const double halo =
        double(ih * iw) / double(std::max<int64_t>(1, tile.th * g.SH * tile.tw * g.SW));
    const double y_elems = double(g.N * g.C * g.OH * g.OW);
    v.bytes = double(esize) * (double(g.N * g.C * g.H * g.W) * std::max(1.0, halo) +
                               y_elems * (ep.residual ? 2 : 1) + double(g.C * g.KH * g.KW));
    v.flops = 2 * g.macs();
    // Work that is dropped: edge tiles, channels past C, pixel groups past the tile.
    const double used =
        double(g.OH * g.OW) / double(tiles * np * tile.p) * double(g.C) / double(ctiles * tile.tc);
    // Coalescing: lanes run along y's fastest axis (channels for NHWC, pixels for NCHW); a
    // block narrower than a warp there wastes part of each transaction.
    const double lanes = lay == Layout::nhwc ? double(tile.tc) : double(np);
    v.efficiency = 0.7 * used * std::min(1.0, lanes / 32.0);
    v.math = Math::fp32;
    v.note = fmt::format("{}x{} output pixels x {} channels per block, patch staged once, "
                         "{} weights per thread in registers, {} pixels per thread",
                         tile.th, tile.tw, tile.tc, g.KH * g.KW, tile.p);
    v.layouts = {{"x", xlay}, {"y", lay}};
    if (ep.residual) v.layouts.push_back({"residual", lay});
    out.push_back(std::move(v));
  }
  drop_underfilled(out, s.gpu);
  return out;
}

} // namespace kiln
