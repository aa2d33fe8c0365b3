// templates/conv/sparse.cuh seen from the generator.
#include "generator/cost/kernel_cost.hpp"
#include "generator/select/epilogue.hpp"
#include "generator/select/families/conv/conv_geometry.hpp"
#include "generator/select/families/sparse/sparse_families.hpp"

#include <fmt/format.h>
#include <set>

namespace kiln {

using namespace conv_family;

namespace {

// Block tiles offered: output pixels TH x TW, output channels TO (a lane owns TO / 32 of
// them when TO >= 32, so a warp's lanes share one pixel and walk one nonzero list).
struct SparseTile {
  int64_t th, tw, to;
};
constexpr SparseTile kSparseTiles[] = {
    {8, 8, 32},  // few output channels (DenseNet's growth of 32)
    {8, 8, 64},  // more channels per nonzero: more work per staged entry
    {4, 8, 128}, // wide layers, small images
    {4, 4, 32},  // small images: more blocks
};
constexpr int64_t kMaxThreads = 256;
// Shared memory a block may use: below the opt-in limit, and small enough that two blocks
// share an SM where the GPU allows.
constexpr int64_t kSmemTarget = 96 * 1024;

int64_t up16(int64_t b) { return (b + 15) / 16 * 16; }

} // namespace

std::vector<Variant> SparseConvFamily::candidates(const StepInfo& s) const {
  const Step& st = s.step;
  if (st.fn != Fn::conv2d_forward_sparse || st.accumulate || st.sparse.guard == Guard::dense)
    return {};
  if (!uniform_storage(s)) return {};
  const Layout lay = s.layout("y");
  if (s.has("residual") && s.layout("residual") != lay) return {};
  const bool w_ohwi = s.layout("w") == Layout::nhwc;
  const ConvGeom g = conv_geom(st.attrs, s.shape("x"), s.shape("y"));
  const DType t = s.dtype("y");
  const int64_t esize = int64_t(dtype_size(t));
  const int64_t cs = s.shape("values")[2];
  const int64_t Cg = g.Cg(), Og = g.Og(), KK = g.KK();
  const KernelEpilogue ep = epilogue_of(s);
  const bool residual = ep.residual, guard = st.sparse.guard == Guard::sparse;
  const double d = planned_density(st);
  const OutputForm form(s);
  // The slices of one group's channels (a group may start inside a slice).
  const int64_t group_slices = (Cg + cs - 1) / cs + (Cg % cs != 0 && g.G > 1 ? 1 : 0);

  std::vector<Variant> out;
  std::set<std::string> names;
  for (SparseTile tile : kSparseTiles) {
    const int64_t th = std::min(tile.th, g.OH), tw = std::min(tile.tw, g.OW);
    const int64_t to = std::min(tile.to, pow2_at_least(Og));
    const int64_t po = to >= 32 ? to / 32 : 1, nco = to / po;
    if (!form.fits(to, Og, g.G)) continue;
    int64_t pg = std::max<int64_t>(std::min(kMaxThreads / nco, pow2_at_least(th * tw)),
                                   32 / std::min<int64_t>(nco, 32));
    const int64_t p = (th * tw + pg - 1) / pg;
    const int64_t threads = pg * nco;
    const int64_t ih = (th - 1) * g.SH + (g.KH - 1) * g.DH + 1,
                  iw = (tw - 1) * g.SW + (g.KW - 1) * g.DW + 1;
    const int64_t patch = ih * iw;
    const auto smem = [&](int64_t sc) {
      return up16(4 * KK * sc * cs * to) + 2 * up16(4 * patch * sc * cs) + 4 * patch * sc;
    };
    int64_t sc = std::max<int64_t>(1, group_slices);
    const int64_t budget = std::min(kSmemTarget, s.gpu.shared_memory_per_block_optin);
    const int64_t fixed = form.smem(th, tw, to); // the epilogue's staged tile
    while (sc > 1 && smem(sc) + fixed > budget)
      sc = (sc + 1) / 2;
    if (smem(sc) + fixed > s.gpu.shared_memory_per_block_optin) continue;
    Variant v;
    v.family = "conv2d_sparse";
    v.header = "conv/sparse.cuh";
    v.function = "kiln::conv::sparse_forward";
    v.name = fmt::format("conv2d_sparse_{}_{}{}_{}_cs{}{}_t{}x{}o{}_p{}x{}_sc{}_t{}{}{}_{}",
                         dtype_tag(t), layout_name(lay), w_ohwi ? "_wohwi" : "", geom_name(g), cs,
                         ep.tag(), th, tw, to, p, po, sc, threads, guard_tag(st), form.tag(),
                         s.arch_tag());
    if (!names.insert(v.name).second) continue;
    cfg_type(v, "T", cpp_type(t));
    cfg_geom(v, g);
    cfg_int(v, "CS", cs);
    cfg_bool(v, "NHWC", lay == Layout::nhwc);
    cfg_bool(v, "W_OHWI", w_ohwi);
    ep.cfg(v);
    cfg_guard(v, st);
    form.cfg(v);
    cfg_int(v, "TH", th);
    cfg_int(v, "TW", tw);
    cfg_int(v, "TO", to);
    cfg_int(v, "PO", po);
    cfg_int(v, "P", p);
    cfg_int(v, "SC", sc);
    cfg_int(v, "THREADS", threads);
    v.args = {"values", "index", "count", "w"};
    ep.add_args(v);
    if (guard) v.args.push_back("nnz");
    v.args.push_back("y");
    form.add_args(v);
    const int64_t tiles = ((g.OH + th - 1) / th) * ((g.OW + tw - 1) / tw);
    const int64_t otiles = (Og + to - 1) / to;
    const int64_t chunks = (group_slices + sc - 1) / sc;
    v.grid = {tiles, g.G * otiles, g.N};
    v.block = {threads, 1, 1};
    v.dynamic_smem = smem(sc);
    v.static_smem = form.smem(th, tw, to);
    v.registers_per_thread = int(40 + p * po);
    // Useful work: the nonzeros' multiply-adds. Bytes: the compacted input (nonzero values
    // and index bytes, a count byte per unit) read once per output-channel tile (the halo
    // and the other tiles from L2 when it fits), the output (and residual) once, weights;
    // plus what every block stages from L2 (its chunk's weights, its patch's units), at a
    // third of the DRAM cost.
    const double x_elems = double(g.N * g.C * g.H * g.W);
    const double compacted = x_elems * d * double(esize + 1) + x_elems / double(cs);
    const double y_elems = double(g.N * g.O * g.OH * g.OW);
    const double blocks = double(tiles * g.G * otiles * g.N);
    const double staged =
        blocks * double(chunks) *
        (double(KK * sc * cs * to * esize) + double(patch * sc) * (cs * d * (esize + 1) + 1));
    v.bytes = dram_reads(s.gpu, compacted, double(otiles)) +
              double(esize) * (double(g.O * Cg * KK) + y_elems * (residual ? 2 : 1)) + staged / 3 +
              form.bytes(y_elems, esize, 0.5);
    v.flops = 2 * g.macs() * d;
    // A nonzero costs each lane PO weight loads from shared memory and PO multiply-adds:
    // shared-memory bandwidth caps it near a quarter of the FP32 peak; lanes of several
    // pixels in one warp (narrow TO) diverge on their lists' lengths.
    const double util = double(g.OH * g.OW) / double(tiles * th * tw) * double(Og) /
                        double(otiles * to) * double(Cg) / double(group_slices * cs);
    v.math = Math::fp32;
    v.efficiency = overlapped_efficiency(
        s.gpu, v, std::min(0.25, double(po) / double(2 * po + 3)) * (nco < 32 ? 0.6 : 1.0) * util);
    v.math = Math::fp32;
    v.note =
        fmt::format("{}x{} output pixels x {} channels per block ({} per lane), {} slices of "
                    "{} channels staged per step; loops over the input's nonzeros only{}",
                    th, tw, to, po, sc, cs,
                    guard ? fmt::format("; runs only when nnz <= {}", st.sparse.threshold) : "");
    v.layouts = {{"y", lay}};
    if (residual) v.layouts.push_back({"residual", lay});
    out.push_back(std::move(v));
  }
  drop_underfilled(out, s.gpu);
  return out;
}

} // namespace kiln
