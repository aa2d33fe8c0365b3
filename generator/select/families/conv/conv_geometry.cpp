#include "generator/select/families/conv/conv_geometry.hpp"

#include "generator/cost/kernel_cost.hpp"

#include <cmath>
#include <fmt/format.h>

namespace kiln::conv_family {

ConvGeom conv_geom(const Attrs& a, const Shape& x, const Shape& y) {
  ConvGeom g{};
  g.N = x[0], g.C = x[1], g.H = x[2], g.W = x[3];
  g.O = y[1], g.OH = y[2], g.OW = y[3];
  g.KH = a.kernel[0], g.KW = a.kernel[1];
  g.SH = a.stride[0], g.SW = a.stride[1];
  g.PH = a.padding[0], g.PW = a.padding[1];
  g.DH = a.dilation[0], g.DW = a.dilation[1];
  g.G = a.groups;
  return g;
}

std::string geom_name(const ConvGeom& g) {
  // OH and OW settle the padding after the input (they differ for tiles of a tiled segment).
  return fmt::format("n{}c{}h{}w{}o{}_k{}x{}s{}x{}p{}x{}d{}x{}g{}{}", g.N, g.C, g.H, g.W, g.O, g.KH,
                     g.KW, g.SH, g.SW, g.PH, g.PW, g.DH, g.DW, g.G,
                     g.OH == window_out(g.H, g.KH, g.SH, g.PH, g.DH, false) &&
                             g.OW == window_out(g.W, g.KW, g.SW, g.PW, g.DW, false)
                         ? ""
                         : fmt::format("_oh{}ow{}", g.OH, g.OW));
}

void cfg_geom(Variant& v, const ConvGeom& g) {
  const std::pair<const char*, int64_t> values[] = {
      {"N", g.N},   {"C", g.C},   {"H", g.H},   {"W", g.W},   {"O", g.O},   {"OH", g.OH},
      {"OW", g.OW}, {"KH", g.KH}, {"KW", g.KW}, {"SH", g.SH}, {"SW", g.SW}, {"PH", g.PH},
      {"PW", g.PW}, {"DH", g.DH}, {"DW", g.DW}, {"G", g.G}};
  for (const auto& [name, value] : values)
    cfg_int(v, name, value);
}

bool uniform_storage(const StepInfo& s) {
  DType t = DType::f64;
  for (const Arg& a : s.step.args) {
    const DType d = s.plan.buffers[a.buffer].dtype;
    if (d == DType::u8 || d == DType::i32) continue; // sparse forms' indices and counts
    if (d != DType::f32 && d != DType::f16 && d != DType::bf16) return false;
    if (t != DType::f64 && d != t) return false;
    t = d;
  }
  return t != DType::f64;
}

void cfg_guard(Variant& v, const Step& st) {
  cfg_bool(v, "GUARD", st.sparse.guard != Guard::none);
  cfg_int(v, "THRESHOLD", st.sparse.guard != Guard::none ? st.sparse.threshold : 0);
}

std::string guard_tag(const Step& st) {
  if (st.sparse.guard == Guard::none) return "";
  return fmt::format("_g{}{}", st.sparse.guard == Guard::dense ? 'd' : 's', st.sparse.threshold);
}

OutputForm::OutputForm(const StepInfo& s) {
  compact = s.has("y_values");
  if (!compact) return;
  ycs = s.shape("y_values")[2];
  count = s.has("y_nnz");
}

bool OutputForm::fits(int64_t to, int64_t og, int64_t groups) const {
  return !compact || ((ycs <= 32 ? 32 % ycs == 0 : ycs % 32 == 0) && to % ycs == 0 &&
                      (groups == 1 || og % ycs == 0));
}

void OutputForm::cfg(Variant& v) const {
  cfg_bool(v, "COMPACT", compact);
  cfg_int(v, "YCS", compact ? ycs : 1);
  cfg_bool(v, "YCOUNT", count);
}

void OutputForm::add_args(Variant& v) const {
  if (!compact) return;
  for (const char* r : {"y_values", "y_index", "y_count"})
    v.args.push_back(r);
  if (count) v.args.push_back("y_nnz");
}

std::string OutputForm::tag() const {
  return compact ? fmt::format("_ycs{}{}", ycs, count ? "c" : "") : "";
}

int64_t OutputForm::smem(int64_t th, int64_t tw, int64_t to) const {
  return compact ? (th * tw * (to + 1) * 4 + 15) / 16 * 16 + (count ? 32 : 0) : 0;
}

double OutputForm::bytes(double y_elems, int64_t esize, double d) const {
  return compact ? y_elems * d * double(esize + 1) + y_elems / double(ycs) : 0;
}

std::string tile_name(const ImageTile& t, char chan, char staged) {
  return fmt::format("t{}x{}{}{}{}{}_p{}x{}", t.th, t.tw, chan, t.tc, staged, t.ck, t.p, t.pc);
}

double tile_utilization(const ImageTile& t, int64_t out_h, int64_t out_w, int64_t chans,
                        int64_t reduce) {
  const auto up = [](int64_t a, int64_t b) { return double((a + b - 1) / b * b); };
  const double pixels =
      double((out_h + t.th - 1) / t.th) * double((out_w + t.tw - 1) / t.tw) * double(t.np() * t.p);
  return double(out_h * out_w) / pixels * double(chans) / up(chans, t.tc) * double(reduce) /
         up(reduce, t.ck);
}

double dram_reads(const GpuDesc& gpu, double bytes, double reads) {
  return 2 * bytes <= double(gpu.l2_bytes) ? bytes : bytes * reads;
}

void drop_underfilled(std::vector<Variant>& variants, const GpuDesc& gpu) {
  int64_t most = 0;
  for (const Variant& v : variants)
    most = std::max(most, v.blocks());
  const int64_t enough = std::min<int64_t>(gpu.sm_count, most);
  std::erase_if(variants, [&](const Variant& v) {
    const double floor_us = roofline(gpu, v.flops, v.bytes, v.math).floor_us();
    return 2 * v.blocks() < enough && floor_us > 1.0;
  });
}

double micro_tile_efficiency(int64_t p, int64_t pc) {
  const double fmas_per_load = double(p * pc) / double(p + pc);
  return std::clamp(0.1 + 0.2 * fmas_per_load, 0.15, 0.7);
}

} // namespace kiln::conv_family
