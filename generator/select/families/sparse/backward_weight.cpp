// templates/conv/sparse_backward_weight.cuh seen from the generator.
#include "generator/cost/kernel_cost.hpp"
#include "generator/select/families/conv/conv_geometry.hpp"
#include "generator/select/families/sparse/sparse_families.hpp"

#include <fmt/format.h>
#include <set>

namespace kiln {

using namespace conv_family;

namespace {

// Warps (each owning CPW input channels) and the input tile walked per step.
struct WeightShape {
  int64_t warps, rh, rw;
};
constexpr WeightShape kShapes[] = {
    {8, 4, 8}, // 256 threads
    {4, 4, 8}, // fewer channels per block: more blocks
    {2, 8, 8}, // small layers
};
constexpr int64_t kMaxAccumulators = 64; // CPW * KK * PO registers per thread

} // namespace

std::vector<Variant> SparseBackwardWeightFamily::candidates(const StepInfo& s) const {
  const Step& st = s.step;
  if (st.fn != Fn::conv2d_backward_weight_sparse || st.sparse.guard == Guard::dense) return {};
  // Partial sums over SPLITS ranges of rows (float, OIHW order), or dw itself.
  const int64_t splits = s.has("partial") ? s.shape("partial")[0] : 1;
  if (splits > 1 && s.dtype("partial") != DType::f32) return {};
  for (const Arg& a : st.args) {
    const DType d = s.plan.buffers[a.buffer].dtype;
    if (a.role != "partial" && is_float(d) && d != s.dtype("dy")) return {};
  }
  const DType t = s.dtype("dy");
  if (t != DType::f32 && t != DType::f16 && t != DType::bf16) return {};
  const Layout lay = s.layout("dy");
  const bool w_ohwi = splits == 1 && s.layout("dw") == Layout::nhwc;
  const ConvGeom g = conv_geom(st.attrs, s.shape("x"), s.shape("dy"));
  const int64_t esize = int64_t(dtype_size(t));
  const int64_t cs = s.shape("values")[2];
  const int64_t Cg = g.Cg(), Og = g.Og(), KK = g.KK();
  const bool guard = st.sparse.guard == Guard::sparse;
  const double d = planned_density(st);
  const int64_t po = std::max<int64_t>(1, std::min<int64_t>(4, (Og + 31) / 32));
  const int64_t to = 32 * po;

  std::vector<Variant> out;
  std::set<std::string> names;
  // Taps per block: all of them, a kernel row, or one (more blocks, each walking the input).
  std::vector<int64_t> tap_groups = {KK};
  if (g.KW < KK) tap_groups.push_back(g.KW);
  if (KK > 1) tap_groups.push_back(1);
  for (int64_t kt : tap_groups)
    for (WeightShape sh : kShapes) {
      if (kt * po > kMaxAccumulators) continue; // one channel's taps do not fit the registers
      const int64_t cpw = std::min<int64_t>(std::max<int64_t>(1, kMaxAccumulators / (kt * po)),
                                            std::max<int64_t>(1, (Cg + sh.warps - 1) / sh.warps));
      const int64_t kc = cpw * sh.warps, threads = 32 * sh.warps;
      const int64_t rh = std::min(sh.rh, g.H), rw = std::min(sh.rw, g.W);
      const int64_t orh = (rh - 1 + (g.KH - 1) * g.DH) / g.SH + 2;
      const int64_t orw = (rw - 1 + (g.KW - 1) * g.DW) / g.SW + 2;
      const int64_t smem = (4 * rh * rw * kc + 15) / 16 * 16 + 4 * orh * orw * to;
      if (smem > s.gpu.shared_memory_per_block_optin) continue;
      Variant v;
      v.family = "conv2d_backward_weight_sparse";
      v.header = "conv/sparse_backward_weight.cuh";
      v.function = "kiln::conv::sparse_backward_weight";
      v.name = fmt::format(
          "conv2d_backward_weight_sparse_{}_{}{}_{}_cs{}{}{}_o{}c{}k{}_r{}x{}_t{}{}_{}",
          dtype_tag(t), layout_name(lay), w_ohwi ? "_wohwi" : "", geom_name(g), cs,
          st.accumulate ? "_acc" : "", splits > 1 ? fmt::format("_split{}", splits) : "", to, kc,
          kt, rh, rw, threads, guard_tag(st), s.arch_tag());
      if (!names.insert(v.name).second) continue;
      cfg_type(v, "T", cpp_type(t));
      cfg_geom(v, g);
      cfg_int(v, "CS", cs);
      cfg_bool(v, "NHWC", lay == Layout::nhwc);
      cfg_bool(v, "W_OHWI", w_ohwi);
      cfg_bool(v, "ACCUMULATE", st.accumulate);
      cfg_guard(v, st);
      cfg_int(v, "TO", to);
      cfg_int(v, "PO", po);
      cfg_int(v, "CPW", cpw);
      cfg_int(v, "KT", kt);
      cfg_int(v, "SPLITS", splits);
      cfg_int(v, "RH", rh);
      cfg_int(v, "RW", rw);
      cfg_int(v, "THREADS", threads);
      v.args = {"values", "index", "count", "dy"};
      if (guard) v.args.push_back("nnz");
      v.args.push_back(splits > 1 ? "partial" : "dw");
      const int64_t ctiles = (Cg + kc - 1) / kc, otiles = (Og + to - 1) / to;
      const int64_t ktiles = (KK + kt - 1) / kt;
      v.grid = {ctiles, g.G * otiles, ktiles * splits};
      v.block = {threads, 1, 1};
      v.dynamic_smem = smem;
      v.registers_per_thread = int(40 + cpw * kt * po);
      // Every block walks its rows of the input (all, or a split's): it stages dy's window per
      // tile (from L2 when dy fits there) and its channels' nonzeros; the useful multiply-adds
      // are the nonzeros'. A split's tiles may end early at its edge.
      const double x_elems = double(g.N * g.C * g.H * g.W),
                   y_elems = double(g.N * g.O * g.OH * g.OW);
      const double tiles = (double(g.N) * double((g.H + rh - 1) / rh) + double(splits - 1)) *
                           double((g.W + rw - 1) / rw);
      const double blocks = double(ctiles * g.G * otiles * ktiles * splits);
      // The splits of one dw tile walk the input once between them.
      const double dy_staged = blocks / double(splits) * tiles * double(orh * orw * to * esize);
      v.bytes =
          dram_reads(s.gpu, y_elems * double(esize), double(ctiles)) +
          dram_reads(s.gpu, x_elems * (d * double(esize + 1) + 1.0 / double(cs)), double(otiles)) +
          double(g.O * Cg * KK) *
              (splits > 1 ? 4.0 * double(splits) : double(esize * (st.accumulate ? 2 : 1))) +
          dy_staged / 3;
      v.flops = 2 * g.macs() * d;
      // Every block scans its channels' values at every pixel (a load and a test each) and
      // works on the nonzeros: with fewer taps per block the scan weighs more.
      const double util = double(Og) / double(otiles * to) * double(Cg) / double(ctiles * kc) *
                          double(KK) / double(ktiles * kt);
      const double work = d * double(kt) * double(2 * po + 2), scan = 3.0;
      v.math = Math::fp32;
      v.efficiency = overlapped_efficiency(s.gpu, v, 0.3 * util * work / (work + scan));
      v.note =
          fmt::format("dw tile {} output x {} input channels x {} taps per block, input walked "
                      "in {}x{} pixel tiles; nonzeros only, one fixed order{}",
                      to, kc, kt, rh, rw,
                      guard ? fmt::format("; runs only when nnz <= {}", st.sparse.threshold) : "");
      v.layouts = {{"dy", lay}};
      if (splits == 1) v.layouts.push_back({"dw", w_ohwi ? Layout::nhwc : Layout::nchw});
      out.push_back(std::move(v));
    }
  drop_underfilled(out, s.gpu);
  return out;
}

} // namespace kiln
