// templates/conv/backward_weight.cuh seen from the generator.
#include "generator/select/families/conv/conv_families.hpp"
#include "generator/select/families/conv/conv_geometry.hpp"

#include <fmt/format.h>
#include <set>

namespace kiln {

using namespace conv_family;

namespace {

// A dw tile: TO output channels x TK (input channel, tap) columns, PO x PK per thread.
struct WeightTile {
  int64_t to, tk, po, pk;
};
constexpr WeightTile kWeightTiles[] = {
    {32, 32, 4, 4}, // most reuse per staged position
    {16, 16, 2, 2}, // more blocks
    {8, 8, 2, 2},   // many slices: small weights, long reductions
};
// Positions staged per step (RC): a multiple of every slice count (powers of two to 64).
constexpr int64_t kChunk = 64;
constexpr int64_t kMaxSlices = 64;
// What the H100 measured of the micro-tile's price (bench/results/h100_2026-11-27, ncu of
// resnet50 f16 b32 training steps): the NCHW step's 53 weight gradients ran 76.7 ms for the
// 19.4 priced (3.96x), the channels-last step's stem 7.49 ms for 2.82 (2.66x).
constexpr double kMeasured = 0.25;

} // namespace

std::vector<Variant> ConvBackwardWeightFamily::candidates(const StepInfo& s) const {
  const Step& st = s.step;
  if (st.fn != Fn::conv2d_backward_weight || st.sparse.guard == Guard::sparse) return {};
  // Slices of the positions (rewrite/backward_weight_split.hpp): fp32 slices of dw in
  // `partial`, each block one slice's; partial.sum adds them (and accumulates).
  const bool partial = s.has("partial");
  const char* out_role = partial ? "partial" : "dw";
  if (partial == s.has("dw")) return {};
  if (!partial && !uniform_storage(s)) return {};
  if (partial) { // x and dy alike, the slices fp32; a slice is written, partial.sum accumulates
    const DType t = s.dtype("x");
    const bool storable = t == DType::f32 || t == DType::f16 || t == DType::bf16;
    if (!storable || s.dtype("dy") != t || s.dtype("partial") != DType::f32 || st.accumulate ||
        st.sparse.guard != Guard::none)
      return {};
  }
  const int64_t z = partial ? s.shape("partial")[0] : 1;
  // dw OIHW; x and dy in either layout alike: NCHW, and NHWC where either is (a plan converts
  // the other for it; a channels-last plan's stem reads the network's NCHW input beside an
  // NHWC dy, and its weight gradient is priced, split, as either).
  if (s.layout(out_role) != Layout::nchw) return {};
  std::vector<bool> layouts = {false};
  if (s.layout("x") == Layout::nhwc || s.layout("dy") == Layout::nhwc)
    layouts.insert(layouts.begin(), true);
  const ConvGeom g = conv_geom(st.attrs, s.shape("x"), s.shape("dy"));
  const DType t = s.dtype("x");
  const int64_t esize = int64_t(dtype_size(t));
  const int64_t Og = g.Og(), K = g.Cg() * g.KK(), R = g.N * g.OH * g.OW;

  std::vector<Variant> out;
  std::set<std::string> names;
  for (bool nhwc : layouts)
    for (WeightTile w : kWeightTiles) {
      // Row and column groups are powers of two (the micro-tile shrinks rather than the tile
      // padding), so are the slices: blocks of 32 to 256 threads.
      const auto fit = [](int64_t& tile, int64_t& micro, int64_t extent) {
        const int64_t t = std::min(tile, extent);
        const int64_t groups = pow2_at_least((t + std::min(micro, t) - 1) / std::min(micro, t));
        micro = (t + groups - 1) / groups;
        tile = groups * micro;
      };
      fit(w.to, w.po, Og);
      fit(w.tk, w.pk, K);
      const int64_t nt = (w.to / w.po) * (w.tk / w.pk);
      const int64_t slices = std::min(kMaxSlices, kMaxBlock / nt);
      const int64_t threads = nt * slices;
      Variant v;
      v.family = "conv2d_backward_weight";
      v.header = "conv/backward_weight.cuh";
      v.function = "kiln::conv::backward_weight";
      v.name = fmt::format("conv2d_backward_weight_{}_{}_{}{}_t{}x{}_p{}x{}_s{}r{}_t{}{}{}_{}",
                           dtype_tag(t), nhwc ? "nhwc" : "nchw", geom_name(g),
                           st.accumulate ? "_acc" : "", w.to, w.tk, w.po, w.pk, slices, kChunk,
                           threads, guard_tag(st),
                           partial ? fmt::format("_z{}partial", z) : std::string(), s.arch_tag());
      if (!names.insert(v.name).second) continue;
      cfg_type(v, "T", cpp_type(t));
      cfg_geom(v, g);
      cfg_bool(v, "ACCUMULATE", st.accumulate);
      cfg_guard(v, st);
      cfg_int(v, "TO", w.to);
      cfg_int(v, "TK", w.tk);
      cfg_int(v, "PO", w.po);
      cfg_int(v, "PK", w.pk);
      cfg_int(v, "S", slices);
      cfg_int(v, "RC", kChunk);
      cfg_int(v, "THREADS", threads);
      if (nhwc) cfg_bool(v, "NHWC", true);
      if (partial) cfg_int(v, "SLICES", z);
      v.args = {"x", "dy"};
      if (st.sparse.guard == Guard::dense) v.args.push_back("nnz");
      v.args.push_back(out_role);
      const int64_t otiles = (Og + w.to - 1) / w.to, ktiles = (K + w.tk - 1) / w.tk;
      v.grid = {ktiles, g.G * otiles, z};
      v.block = {threads, 1, 1};
      v.static_smem = std::max((w.to + w.tk) * (kChunk + 1), slices * w.to * w.tk) * 4;
      v.registers_per_thread = int(34 + w.po * w.pk + w.po + w.pk);
      // dy is re-read by every column tile; the gathered columns come from x, which the taps
      // of one block share through the caches, once per row tile.
      const double dw_elems = double(g.O * K);
      v.bytes = dram_reads(s.gpu, double(esize * g.N * g.O * g.OH * g.OW), double(ktiles)) +
                dram_reads(s.gpu, double(esize * g.N * g.C * g.H * g.W), double(otiles)) +
                (partial ? 4.0 * double(z) : double(esize)) * dw_elems * (st.accumulate ? 2 : 1);
      v.flops = 2 * g.macs();
      const int64_t per_slice = (R + z - 1) / z; // positions a block reduces
      const double util = double(Og) / double(otiles * w.to) * double(K) / double(ktiles * w.tk) *
                          double(per_slice) / double((per_slice + kChunk - 1) / kChunk * kChunk);
      v.efficiency = micro_tile_efficiency(w.po, w.pk) * util * kMeasured;
      v.math = Math::fp32;
      v.note = fmt::format("dw tile {}x{} per block, {} slices of the N*OH*OW reduction ({} "
                           "positions staged per step), summed in slice order{}",
                           w.to, w.tk, slices, kChunk,
                           partial ? fmt::format("; {} blocks a tile, each one {}-th of the "
                                                 "positions into partial",
                                                 z, z)
                                   : std::string());
      const Layout io = nhwc ? Layout::nhwc : Layout::nchw;
      v.layouts = {{"x", io}, {"dy", io}, {out_role, Layout::nchw}};
      out.push_back(std::move(v));
    }
  drop_underfilled(out, s.gpu);
  return out;
}

} // namespace kiln
