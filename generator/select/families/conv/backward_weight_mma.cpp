// templates/conv/backward_weight_mma.cuh seen from the generator: a channels-last weight
// gradient on tensor cores, writing dw or (split over positions) partial's slices.
#include "generator/select/families/conv/conv_families.hpp"
#include "generator/select/families/conv/conv_geometry.hpp"

#include <fmt/format.h>

namespace kiln {

using namespace conv_family;

std::vector<Variant> ConvBackwardWeightMmaFamily::candidates(const StepInfo& s) const {
  const Step& st = s.step;
  if (st.fn != Fn::conv2d_backward_weight || st.sparse.guard != Guard::none) return {};
  const bool partial = s.has("partial");
  if (partial == s.has("dw") || s.layout("x") != Layout::nhwc || s.layout("dy") != Layout::nhwc)
    return {};
  const char* out = partial ? "partial" : "dw";
  if (s.layout(out) != Layout::nchw || st.accumulate) return {};
  const DType t = s.dtype("x");
  if (s.dtype("dy") != t || s.dtype(out) != (partial ? DType::f32 : t)) return {};
  const std::optional<Math> math = tensor_core_math(t, s.cc());
  if (!math || (t != DType::f16 && t != DType::bf16)) return {};
  const ConvGeom g = conv_geom(st.attrs, s.shape("x"), s.shape("dy"));
  // C not a multiple of 8 (the stem's 3): x staged element by element, a tile's columns
  // across taps (GATHER).
  const bool gather = g.C % 8 != 0;
  if (g.G != 1 || g.O % 8 != 0) return {};
  const int64_t slices = partial ? s.shape("partial")[0] : 1;
  const int64_t R = g.N * g.OH * g.OW, K = g.C * g.KK(), esize = int64_t(dtype_size(t));
  if (std::max(numel(s.shape("x")), R * g.O) >= (int64_t(1) << 31)) return {};
  std::vector<Variant> out_variants;
  for (int64_t bn : {64, 32}) {
    if (!gather && g.C % bn != 0) continue;
    constexpr int64_t bm = 64, bk = 32, threads = 128;
    Variant v;
    v.family = "conv2d_backward_weight_mma";
    v.header = "conv/backward_weight_mma.cuh";
    v.function = "kiln::conv::backward_weight_mma";
    v.name = fmt::format("conv2d_backward_weight_mma_{}_nhwc_{}_{}x{}x{}_s{}{}{}_{}", dtype_tag(t),
                         geom_name(g), bm, bn, bk, slices, gather ? "_gather" : "",
                         partial ? "_partial" : "", s.arch_tag());
    cfg_type(v, "T", cpp_type(t));
    cfg_geom(v, g);
    cfg_int(v, "BM", bm);
    cfg_int(v, "BN", bn);
    cfg_int(v, "BK", bk);
    cfg_int(v, "SLICES", slices);
    cfg_bool(v, "PARTIAL", partial);
    cfg_int(v, "THREADS", threads);
    if (gather) cfg_bool(v, "GATHER", true);
    v.args = {"x", "dy", out};
    const int64_t otiles = (g.O + bm - 1) / bm, ktiles = (K + bn - 1) / bn;
    v.grid = {ktiles, otiles, slices};
    v.block = {threads, 1, 1};
    v.static_smem = (bm + bn) * (bk + 8) * esize;
    v.registers_per_thread = 64; // ptxas: 58-59 on sm_90 (kiln compile of resnet50 b32 f16 h100)
    // dy is read once per column tile and x once per row tile of every tap; each slice
    // writes its fp32 tile of dw.
    v.bytes = dram_reads(s.gpu, double(esize * R * g.O), double(ktiles)) +
              dram_reads(s.gpu, double(esize * g.N * g.H * g.W * g.C),
                         double(otiles * (gather ? ktiles : g.KK()))) +
              double(g.O * K) * (partial ? 4.0 * double(slices) : double(esize));
    v.flops = 2 * g.macs();
    // A simple loop: one stage, its transposing stores and fragment loads between the
    // mmas, so well below what the forward families' pipelined loops reach. On the H100
    // (bench/results/h100_2026-11-27) resnet50 f16 b32's 52 ran 6.76 ms for the 2.74 priced
    // (2.47x), but not alike: its 3x3 convs' ~3x, the 1x1 over 56x56 with C = 64 0.77x (51.7
    // us for 67.1). Left at 0.3 until the loop is pipelined and measured again: a family-wide
    // 0.12 would hand the 1x1 convs to the CUDA-core kernel, unmeasured there.
    v.efficiency = 0.3 * double(g.O) / double(otiles * bm);
    // GATHER: the columns past K idle, and x staged an element a thread (a division and 2-byte
    // load each) at half the runs' rate, stated: unmeasured.
    if (gather) v.efficiency *= 0.5 * double(K) / double(ktiles * bn);
    v.math = *math;
    v.note = fmt::format("dw tile {}x{} per block on m16n8k16 mmas, {} positions staged per step "
                         "(transposed into K-major rows{}), {} slice{} of the positions",
                         bm, bn, bk, gather ? ", x an element at a time across taps" : "", slices,
                         slices == 1 ? "" : "s");
    v.layouts = {{"x", Layout::nhwc}, {"dy", Layout::nhwc}, {out, Layout::nchw}};
    out_variants.push_back(std::move(v));
  }
  return out_variants;
}

} // namespace kiln
