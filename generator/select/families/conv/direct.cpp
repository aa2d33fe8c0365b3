// templates/conv/direct.cuh seen from the generator: conv2d.forward, and conv2d.pool_forward
// (the max pool fused after the epilogue: block tiles of pooled outputs, the conv computed
// over each one's footprint, overlapping footprints recomputed).
#include "generator/select/epilogue.hpp"
#include "generator/select/families/conv/conv_families.hpp"
#include "generator/select/families/conv/conv_geometry.hpp"

#include <fmt/format.h>
#include <set>

namespace kiln {

using namespace conv_family;

std::vector<Variant> ConvDirectFamily::candidates(const StepInfo& s) const {
  const Step& st = s.step;
  const bool pool = st.fn == Fn::conv2d_pool_forward;
  if ((st.fn != Fn::conv2d_forward && !pool) || st.accumulate || st.sparse.guard == Guard::sparse ||
      !uniform_storage(s))
    return {};
  // y and residual share one layout; x may differ (a network's NCHW input read into NHWC).
  const Layout lay = s.layout("y"), xlay = s.layout("x");
  const KernelEpilogue ep = epilogue_of(s);
  const bool residual = ep.residual;
  // x, y and residual share one layout (the instance specializes on it); w either.
  if (residual && s.layout("residual") != lay) return {};
  const bool w_ohwi = s.layout("w") == Layout::nhwc;
  const Shape& x_shape = s.shape("x");
  const ConvGeom g =
      conv_geom(st.attrs, x_shape,
                pool ? infer_shape(OpKind::conv2d, st.attrs, std::span<const Shape>(&x_shape, 1))
                     : s.shape("y"));
  // The pool: window, stride, padding before; its output extents (pooled tiles in them).
  const Attrs pa = pool ? st.fused_pool().pool : Attrs{};
  const int64_t PKH = pa.kernel[0], PKW = pa.kernel[1];
  const int64_t PSH = pa.stride[0], PSW = pa.stride[1];
  const int64_t POH = pool ? s.shape("y")[2] : 0, POW = pool ? s.shape("y")[3] : 0;
  // A block's conv tile: a pooled tile's footprint, or the tile itself.
  const auto conv_tile = [&](ImageTile u) {
    if (!pool) return u;
    u.th = (u.th - 1) * PSH + PKH;
    u.tw = (u.tw - 1) * PSW + PKW;
    while (u.threads() > kMaxBlock)
      ++u.p;
    return u;
  };
  const DType t = s.dtype("x");
  const int64_t esize = int64_t(dtype_size(t));
  const int64_t Cg = g.Cg(), Og = g.Og(), KK = g.KK();
  const OutputForm form(s);
  if (pool && (residual || st.sparse.guard != Guard::none || form.compact)) return {};

  std::vector<Variant> out;
  std::set<std::string> names;
  for (ImageTile fitted : kImageTiles) {
    const auto per_chan = [&](const ImageTile& t) {
      const ImageTile u = conv_tile(t);
      const int64_t ih = (u.th - 1) * g.SH + (g.KH - 1) * g.DH + 1;
      const int64_t iw = (u.tw - 1) * g.SW + (g.KW - 1) * g.DW + 1;
      return ih * iw + KK * u.tc;
    };
    if (!fit_image_tile(fitted, pool ? POH : g.OH, pool ? POW : g.OW, Og, Cg, per_chan)) continue;
    if (!form.fits(fitted.tc, Og, g.G)) continue;
    const ImageTile tile = conv_tile(fitted); // the conv's (pooled: fitted is the pool's)
    const int64_t pooled_smem = pool ? tile.th * tile.tw * (tile.tc + 1) * 4 : 0;
    if (per_chan(fitted) * tile.ck * 4 + pooled_smem > 48 * 1024) continue;
    const std::string pool_tag =
        pool ? fmt::format("_maxpool{}x{}s{}x{}p{}x{}_o{}x{}_pt{}x{}", PKH, PKW, PSH, PSW,
                           pa.padding[0], pa.padding[1], POH, POW, fitted.th, fitted.tw)
             : "";
    Variant v;
    v.family = "conv2d_direct";
    v.header = "conv/direct.cuh";
    v.function = "kiln::conv::direct";
    v.name = fmt::format(
        "conv2d_direct_{}_{}{}{}_{}{}{}_{}_t{}{}{}_{}", dtype_tag(t), layout_name(lay),
        xlay != lay ? fmt::format("_x{}", layout_name(xlay)) : "", w_ohwi ? "_wohwi" : "",
        geom_name(g), ep.tag(), pool_tag, tile_name(tile, 'o', 'c'), tile.threads(), guard_tag(st),
        form.tag(), s.arch_tag());
    if (!names.insert(v.name).second) continue; // fitting made two configurations one
    cfg_type(v, "T", cpp_type(t));
    cfg_geom(v, g);
    cfg_bool(v, "NHWC", lay == Layout::nhwc);
    cfg_bool(v, "X_NHWC", xlay == Layout::nhwc);
    cfg_bool(v, "W_OHWI", w_ohwi);
    ep.cfg(v);
    cfg_guard(v, st);
    form.cfg(v);
    cfg_int(v, "TH", tile.th);
    cfg_int(v, "TW", tile.tw);
    cfg_int(v, "TO", tile.tc);
    cfg_int(v, "CK", tile.ck);
    cfg_int(v, "P", tile.p);
    cfg_int(v, "PO", tile.pc);
    cfg_int(v, "THREADS", tile.threads());
    cfg_bool(v, "POOL", pool);
    if (pool) {
      cfg_int(v, "PKH", PKH);
      cfg_int(v, "PKW", PKW);
      cfg_int(v, "PSH", PSH);
      cfg_int(v, "PSW", PSW);
      cfg_int(v, "PPH", pa.padding[0]);
      cfg_int(v, "PPW", pa.padding[1]);
      cfg_int(v, "POH", POH);
      cfg_int(v, "POW", POW);
      cfg_int(v, "PTH", fitted.th);
      cfg_int(v, "PTW", fitted.tw);
    }
    v.args = {"x", "w"};
    ep.add_args(v);
    if (st.sparse.guard == Guard::dense) v.args.push_back("nnz");
    v.args.push_back("y");
    form.add_args(v);
    // Pooled: the footprints of ceil(POH / PTH) x ceil(POW / PTW) pooled tiles, every
    // footprint pixel computed (overlaps twice, pixels past the image as padding).
    const int64_t tiles_h =
        pool ? (POH + fitted.th - 1) / fitted.th : (g.OH + tile.th - 1) / tile.th;
    const int64_t tiles_w =
        pool ? (POW + fitted.tw - 1) / fitted.tw : (g.OW + tile.tw - 1) / tile.tw;
    const int64_t tiles = tiles_h * tiles_w;
    const int64_t otiles = (Og + tile.tc - 1) / tile.tc;
    v.grid = {tiles, g.G * otiles, g.N};
    v.block = {tile.threads(), 1, 1};
    v.static_smem =
        per_chan(fitted) * tile.ck * 4 + form.smem(tile.th, tile.tw, tile.tc) + pooled_smem;
    v.registers_per_thread = int(30 + tile.p * tile.pc + tile.pc + 2 * tile.p);
    // Roofline: blocks read x once per channel tile (with its halo; from DRAM each time when
    // x does not stay in L2), w and bias stay in L2, y is written once, the residual read once.
    const double patch = double(((tile.th - 1) * g.SH + (g.KH - 1) * g.DH + 1) *
                                ((tile.tw - 1) * g.SW + (g.KW - 1) * g.DW + 1));
    const double halo = std::max(1.0, patch / double(tile.th * g.SH * tile.tw * g.SW));
    const double y_elems = double(pool ? g.N * g.O * POH * POW : g.N * g.O * g.OH * g.OW);
    v.bytes = dram_reads(s.gpu, double(esize * g.N * g.C * g.H * g.W), double(otiles) * halo) +
              double(esize) * (double(g.O * Cg * KK) + y_elems * (residual ? 2 : 1)) +
              form.bytes(y_elems, esize, st.sparse.density >= 0 ? st.sparse.density : 0.5);
    const double computed = pool ? double(tiles * tile.th * tile.tw) / double(g.OH * g.OW) : 1.0;
    v.flops = 2 * g.macs() * computed;
    v.efficiency = micro_tile_efficiency(tile.p, tile.pc) *
                   (pool ? tile_utilization(tile, tiles_h * tile.th, tiles_w * tile.tw, Og, Cg)
                         : tile_utilization(tile, g.OH, g.OW, Og, Cg));
    v.math = Math::fp32;
    v.note = fmt::format("{}x{} output pixels x {} channels per block, {} input channels staged "
                         "per step, {}x{} outputs per thread",
                         tile.th, tile.tw, tile.tc, tile.ck, tile.p, tile.pc);
    if (pool)
      v.note += fmt::format("; a {}x{} max pool fused: {}x{} pooled outputs per block, the conv "
                            "over their footprint ({:.2f}x the conv's multiply-adds)",
                            PKH, PKW, fitted.th, fitted.tw, computed);
    // w as the plan holds it (the name says which): declared, so that a measured winner read
    // before assignment converted w (select.cpp) gets w converted for it.
    v.layouts = {{"x", xlay}, {"y", lay}, {"w", w_ohwi ? Layout::nhwc : Layout::nchw}};
    if (residual) v.layouts.push_back({"residual", lay});
    out.push_back(std::move(v));
  }
  drop_underfilled(out, s.gpu);
  return out;
}

} // namespace kiln
