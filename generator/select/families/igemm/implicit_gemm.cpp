// templates/conv/implicit_gemm.cuh, seen from the generator.
#include "generator/select/families/igemm/implicit_gemm.hpp"

#include "generator/select/epilogue.hpp"
#include "generator/select/families/conv/conv_geometry.hpp"
#include "generator/select/families/igemm/loop_model.hpp"

#include <algorithm>
#include <fmt/format.h>

namespace kiln {

// The share of a Hopper's tensor peak (wgmma's) that mma.sync can reach at all. Measured: at
// 0.5, the math-bound tiles (128x128, 128x64) ran 1.22-1.61x their price on an H100, median
// 1.38 (bench/results/h100_2026-11-27b/layers_all_sweep.csv, h100_2026-11-27c/layers_ds_sweep.csv:
// 3x3 convs at 7-28 and a strided 1x1); 0.5 / 1.38.
constexpr double kMmaSyncShareOfWgmmaPeak = 0.36;

namespace {

// Shared rows unpadded, their 16-byte chunks XOR-swizzled: conflict-free fragment loads in
// 20% less shared memory than 4 words of padding a row.
constexpr bool kSwizzle = true;
constexpr int kTileKBytes = 64;  // one k tile of a row: two mma k-steps
constexpr bool kLdmatrix = true; // fragments by ldmatrix.x4 ("ldm"; "lds": 32-bit loads)

// Offsets at or past this need 64-bit arithmetic in the kernel.
constexpr int64_t kIndex32Limit = int64_t(1) << 31;

// Fraction of the issued tile work that is real: M, N and K rounded up to whole tiles.
double tile_utilisation(int64_t m, int64_t n, int64_t k, int64_t bm, int64_t bn, int64_t bk) {
  auto up = [](int64_t a, int64_t b) { return (a + b - 1) / b * b; };
  return double(m) / double(up(m, bm)) * double(n) / double(up(n, bn)) * double(k) /
         double(up(k, bk));
}

} // namespace

const std::vector<IgemmTile>& igemm_tiles() {
  // Registers: the most ptxas allocated for the tile over f16 and f32 and every variant of
  // resnet18 at 64x64 and batch 8, split-K included (NVRTC 13: `kiln generate resnet18 --gpu
  // G --dtype D --batch 8 --image 64 --variants all`, `kiln compile`, the manifest's
  // `compiled.registers`), fragments double-buffered (but in split-K and in the second tile):
  // sm_90 255 (split-K spilling), 128, 168, 96 and 71 (element loads of x: 248, -, 168, 109,
  // 80) for the tiles in this order (test_conv's 64x32 tile with bias, residual and an ACT
  // spelled activation spilled at 72: 80 for both); sm_80 255 (spilling), 206, 168, 96 and 69 (element loads
  // 255, -, 168, 106, 78). Each is rounded up to what the blocks per SM it gives allow, which
  // is what the kernel's __launch_bounds__ promises (select.cpp), so ptxas cannot take more:
  // 256 threads at two blocks keep to 128, where element loads of x do not fit: that tile is
  // offered with 16-byte loads only. The census test holds sm_90's chosen kernels to these.
  static const std::vector<IgemmTile> tiles = {
      {128, 128, 2, 2, 3, 255, 255, 255, 255, true},
      {128, 128, 2, 4, 3, 128, 0, 255, 0, false, 1},
      {128, 64, 2, 2, 4, 168, 168, 208, 168},
      {64, 64, 2, 2, 4, 128, 128, 128, 128},
      {64, 32, 2, 2, 4, 80, 80, 96, 80},
  };
  return tiles;
}

std::vector<Variant> ImplicitGemmFamily::candidates(const StepInfo& s) const {
  const Step& st = s.step;
  // A linear layer is a 1x1 convolution of 1x1 images: x [N, F] is NHWC [N, 1, 1, F], w
  // [K, F] OHWI [K, 1, 1, F] and y [N, K] NHWC [N, 1, 1, K], byte for byte, so its forward
  // runs on tensor cores too (the folded models' wide classifiers at small batches).
  const bool linear = st.fn == Fn::linear_forward || st.fn == Fn::linear_forward_partial ||
                      st.fn == Fn::linear_forward_split;
  // Split-K (generator/rewrite/split_k.cpp): raw sums of S ranges of k into partial, which
  // partial.sum completes; or (in_kernel) completed by each tile's last block in this kernel
  // (conv/igemm/split_reduce.cuh), partial and tickets its workspace.
  const bool split = st.fn == Fn::conv2d_forward_partial || st.fn == Fn::linear_forward_partial;
  const bool in_kernel = st.fn == Fn::conv2d_forward_split || st.fn == Fn::linear_forward_split;
  // A max pool fused after the epilogue (generator/rewrite/conv_pool.cpp).
  const bool pool = st.fn == Fn::conv2d_pool_forward;
  // A conv that compacts its output is the register-tiled families' (conv/tile_epilogue.cuh).
  if ((st.fn != Fn::conv2d_forward && !linear && !split && !in_kernel && !pool) || st.accumulate ||
      st.sparse.guard == Guard::sparse || st.arg("y_values") >= 0)
    return {};
  if (pool && (s.has("residual") || st.sparse.guard != Guard::none)) return {};
  Attrs a = st.attrs;
  if (linear) a = Attrs{}; // stride 1, padding 0, dilation 1
  if (a.groups != 1) return {};
  // A squeeze-excite gate fused into this conv (generator/rewrite/gates.cpp): x scaled per
  // (n, c) as it is loaded.
  const bool gate = s.has("gate");
  if (gate && (linear || pool)) return {};
  const Buffer& xb = s.arg("x");
  const DType t = xb.dtype;
  for (const Arg& arg : st.args)
    if (arg.role != "nnz" && arg.role != "partial" && arg.role != "tickets" &&
        s.plan.buffers[arg.buffer].dtype != t)
      return {};
  if ((split || in_kernel) && s.dtype("partial") != DType::f32) return {};
  if (in_kernel && s.dtype("tickets") != DType::i32) return {};
  const std::optional<Math> tc = tensor_core_math(t, s.cc());
  if (!tc) return {};
  const Math math = *tc;
  const auto image = [&](const Shape& v) {
    return linear && v.size() == 2 ? Shape{v[0], v[1], 1, 1} : v;
  };
  const Shape x = image(xb.shape), w = image(s.shape("w"));
  const Shape y = pool ? infer_shape(OpKind::conv2d, a, std::span<const Shape>(&xb.shape, 1))
                       : image(s.shape(split ? "partial" : "y"));
  const int64_t POH = pool ? s.shape("y")[2] : 0, POW = pool ? s.shape("y")[3] : 0;
  if (x.size() != 4 || w.size() != 4 || y.size() != 4) return {};
  const int64_t N = x[0], C = x[1], H = x[2], W = x[3];
  if (gate && s.shape("gate") != Shape{N, C, 1, 1}) return {};
  const int64_t O = w[0], KH = w[2], KW = w[3], OH = y[2], OW = y[3];
  const int64_t conv_rows = N * OH * OW, K = KH * KW * C;
  if (conv_rows <= 0 || O <= 0 || K <= 0 || N <= 0 || y[0] % N != 0) return {};
  // The partial buffer holds S slices of y.
  const int64_t S = (in_kernel ? image(s.shape("partial"))[0] : y[0]) / N;
  if (S < 1 || (!split && !in_kernel && S != 1) || (in_kernel && S < 2) || S > (K + 15) / 16)
    return {};
  const int64_t tickets = in_kernel ? numel(s.shape("tickets")) : 0;
  const int64_t slices_numel = in_kernel ? S * numel(y) : split ? numel(y) : 0;
  const KernelEpilogue ep = epilogue_of(s);
  const bool bias = ep.bias, residual = ep.residual;
  const int64_t es = int64_t(dtype_size(t));
  const int64_t vec = 16 / es;
  const bool vec_b = K % vec == 0;
  // The kernel also forms offsets a little past the tensors (rows of the last tiles, the
  // image row of a padded pixel) that it never dereferences: keep those in range too.
  const int64_t slack = H * W * C + 256 * (O + K);
  // y (or the pooled y) a channel window of a concat's output (Buffer::view_pitch): its
  // pixels y_pitch apart.
  const int64_t y_pitch = split || linear ? 0 : s.arg("y").view_pitch;
  const int64_t y_span = y_pitch > 0 ? s.arg("y").span_bytes() / es : numel(y);
  // x a channel window of a wider tensor (a channel slice as a view): NHWC variants read it
  // through its pitch (X_PITCH).
  const int64_t x_pitch = linear ? 0 : s.arg("x").view_pitch;
  const int64_t x_span = x_pitch > 0 ? s.arg("x").span_bytes() / es : numel(x);
  const bool idx64 = std::max({x_span, y_span, numel(w), slices_numel}) + slack >= kIndex32Limit;
  const int cc = s.cc();
  const int64_t bk = kTileKBytes / es;
  // tf32 weights rounded once in the prepare phase, activations by their producer's epilogue
  // (Buffer::tf32): what arrives rounded is not rounded per fragment (a gated x is a product,
  // rounded here); y rounded in the epilogue where its readers are all tf32 convs.
  const bool b_tf32 = es == 4 && s.arg("w").tf32;
  const bool a_tf32 = es == 4 && !gate && s.arg("x").tf32;
  const bool y_tf32 = es == 4 && !split && s.arg("y").tf32;
  const std::string shape = fmt::format(
      "n{}c{}h{}w{}_o{}k{}x{}s{}x{}p{}x{}{}d{}x{}{}{}{}{}{}", N, C, H, W, O, KH, KW, a.stride[0],
      a.stride[1], a.padding[0], a.padding[1], padding_end_tag(a), a.dilation[0], a.dilation[1],
      gate ? "_gate" : "", ep.tag(), conv_family::guard_tag(st),
      split       ? fmt::format("_split{}", S)
      : in_kernel ? fmt::format("_split{}reduce", S)
                  : "",
      fmt::format("{}{}{}{}{}", a_tf32 ? "_xtf32" : "", b_tf32 ? "_wtf32" : "",
                  y_tf32 ? "_ytf32" : "", pitch_tag("x", x_pitch), pitch_tag("y", y_pitch)));
  // In the kernel: y and the epilogue's reads, S slices written, S - 1 read by last blocks.
  const double bytes = double((conv_family::x_elements_read(N, C, H, W, OH, OW, KH * KW) +
                               numel(w) + (bias ? O : 0) + (gate ? N * C : 0)) *
                              es) +
                       (split       ? 4.0 * double(numel(y))
                        : pool      ? double(numel(s.shape("y")) * es)
                        : in_kernel ? double(numel(y) * (residual ? 2 : 1) * es) +
                                          4.0 * double((2 * S - 1) * numel(y))
                                    : double(numel(y) * (residual ? 2 : 1) * es));

  std::vector<Variant> out;
  // x NHWC, or x as the plan holds it when that is NCHW (a network's input, or a folded
  // batch's view of it: read in place, element by element, instead of converted).
  std::vector<bool> x_layouts = {false};
  if (!linear && s.layout("x") == Layout::nchw) x_layouts.push_back(true);
  for (bool x_nchw : x_layouts)
    for (const IgemmTile& tile : igemm_tiles()) {
      // Pooled: the most pooled outputs per block whose footprint fits its BM rows.
      int64_t pth = 0, ptw = 0, fh = 1, fw = 1;
      if (pool) {
        const Attrs& pa = st.fused_pool().pool;
        for (int64_t th = 1; th <= POH; ++th)
          for (int64_t tw = 1; tw <= POW; ++tw) {
            const int64_t h = (th - 1) * pa.stride[0] + pa.kernel[0];
            const int64_t wd = (tw - 1) * pa.stride[1] + pa.kernel[1];
            if (h * wd <= tile.bm &&
                (th * tw > pth * ptw || (th * tw == pth * ptw && h * wd < fh * fw)))
              pth = th, ptw = tw, fh = h, fw = wd;
          }
        if (pth == 0) continue; // one window is more than the block's rows
      }
      const int64_t ptiles = pool ? (POH + pth - 1) / pth * ((POW + ptw - 1) / ptw) : 0;
      const int64_t M = pool ? N * ptiles * tile.bm : conv_rows;
      const bool vec_a = !x_nchw && C % vec == 0;
      const char* loads = x_nchw ? "ldnchw" : vec_a ? "cp16" : vec_b ? "cp16w" : "ld";
      if (!vec_a && tile.registers_ld == 0) continue;
      const int stages = cc >= 80 ? tile.stages : 2;
      // A split-K block's range of k is known only at run time: its loop state leaves no
      // registers for a second fragment set (ptxas spills 88-296 bytes at the tiles' bounds).
      const int frag_buffers = split || in_kernel ? 1 : tile.frag_buffers;
      const int64_t row_words = kTileKBytes / 4;
      const int64_t threads = 32 * tile.wm * tile.wn;
      const int64_t blocks = (M + tile.bm - 1) / tile.bm * ((O + tile.bn - 1) / tile.bn) * S;
      if (blocks > 2147483647) continue; // all of them along grid.x
      if (in_kernel && (M + tile.bm - 1) / tile.bm * ((O + tile.bn - 1) / tile.bn) > tickets)
        continue; // a counter per output tile
      Variant v;
      v.family = linear ? "linear_implicit_gemm" : "conv2d_implicit_gemm";
      v.header = "conv/implicit_gemm.cuh";
      v.function = "kiln::conv::implicit_gemm";
      const std::string pool_tag =
          pool ? fmt::format("_maxpool{}x{}s{}x{}p{}x{}_o{}x{}_pt{}x{}",
                             st.fused_pool().pool.kernel[0], st.fused_pool().pool.kernel[1],
                             st.fused_pool().pool.stride[0], st.fused_pool().pool.stride[1],
                             st.fused_pool().pool.padding[0], st.fused_pool().pool.padding[1], POH,
                             POW, pth, ptw)
               : "";
      v.name = fmt::format("{}_{}_nhwc_{}x{}x{}_w{}x{}_s{}_{}_{}_{}{}{}_{}", v.family, dtype_tag(t),
                           tile.bm, tile.bn, bk, tile.wm, tile.wn, stages, loads,
                           fmt::format("{}{}_{}", kLdmatrix ? "ldm" : "lds", frag_buffers,
                                       kSwizzle ? "swz" : "pad4"),
                           shape, pool_tag, idx64 ? "_i64" : "", s.arch_tag());
      cfg_type(v, "T", cpp_type(t));
      cfg_int(v, "N", N);
      cfg_int(v, "C", C);
      cfg_int(v, "H", H);
      cfg_int(v, "W", W);
      cfg_int(v, "O", O);
      cfg_int(v, "KH", KH);
      cfg_int(v, "KW", KW);
      cfg_int(v, "SH", a.stride[0]);
      cfg_int(v, "SW", a.stride[1]);
      cfg_int(v, "OH", OH);
      cfg_int(v, "OW", OW);
      cfg_int(v, "PH", a.padding[0]);
      cfg_int(v, "PW", a.padding[1]);
      cfg_int(v, "DH", a.dilation[0]);
      cfg_int(v, "DW", a.dilation[1]);
      ep.cfg(v);
      conv_family::cfg_guard(v, st);
      cfg_int(v, "BM", tile.bm);
      cfg_int(v, "BN", tile.bn);
      cfg_int(v, "BK", bk);
      cfg_int(v, "WM", tile.wm);
      cfg_int(v, "WN", tile.wn);
      cfg_int(v, "STAGES", stages);
      cfg_bool(v, "VEC_A", vec_a);
      cfg_bool(v, "VEC_B", vec_b);
      cfg_int(v, "PAD", 0);
      cfg_bool(v, "SWIZZLE", kSwizzle);
      cfg_int(v, "FRAG_BUFFERS", frag_buffers);
      cfg_bool(v, "B_TF32", b_tf32);
      if (a_tf32) cfg_bool(v, "A_TF32", true);
      if (y_tf32) cfg_bool(v, "Y_TF32", true);
      cfg_bool(v, "LDMATRIX", kLdmatrix);
      cfg_bool(v, "IDX64", idx64);
      cfg_bool(v, "X_NCHW", x_nchw);
      cfg_int(v, "SPLIT", S);
      if (in_kernel) cfg_bool(v, "SPLIT_REDUCE", true);
      if (gate) cfg_bool(v, "GATE", true);
      cfg_pitch(v, "y", y_pitch);
      cfg_pitch(v, "x", x_nchw ? 0 : x_pitch); // (an NCHW x reads no pitch)
      cfg_bool(v, "POOL", pool);
      if (pool) {
        cfg_int(v, "PKH", st.fused_pool().pool.kernel[0]);
        cfg_int(v, "PKW", st.fused_pool().pool.kernel[1]);
        cfg_int(v, "PSH", st.fused_pool().pool.stride[0]);
        cfg_int(v, "PSW", st.fused_pool().pool.stride[1]);
        cfg_int(v, "PPH", st.fused_pool().pool.padding[0]);
        cfg_int(v, "PPW", st.fused_pool().pool.padding[1]);
        cfg_int(v, "POH", POH);
        cfg_int(v, "POW", POW);
        cfg_int(v, "PTH", pth);
        cfg_int(v, "PTW", ptw);
      }
      v.args = {"x", "w"};
      ep.add_args(v);
      if (st.sparse.guard == Guard::dense) v.args.push_back("nnz");
      v.args.push_back(split ? "partial" : "y");
      if (in_kernel) v.args.insert(v.args.end(), {"partial", "tickets"});
      if (gate) v.args.push_back("gate");
      if (!linear) { // a linear's 2-D tensors have one layout, the same bytes as NHWC
        v.layouts = {{"x", x_nchw ? Layout::nchw : Layout::nhwc},
                     {"w", Layout::nhwc},
                     {split ? "partial" : "y", Layout::nhwc}};
        if (in_kernel) v.layouts.push_back({"partial", Layout::nhwc});
        if (residual) v.layouts.push_back({"residual", Layout::nhwc});
      }
      v.block = {threads, 1, 1};
      v.grid = {blocks, 1, 1};
      // The pipeline, or a pooled conv's staged tile where that is larger (Geometry::SMEM_WORDS).
      v.dynamic_smem = std::max<int64_t>(int64_t(stages) * (tile.bm + tile.bn) * row_words,
                                         pool ? tile.bm * (tile.bn + 1) : 0) *
                       4;
      v.static_smem = 0;
      const bool pre90 = cc < 90;
      const int regs =
          vec_a ? (pre90 && tile.registers_pre90 ? tile.registers_pre90 : tile.registers)
                : (pre90 && tile.registers_ld_pre90 ? tile.registers_ld_pre90 : tile.registers_ld);
      v.registers_per_thread = std::min<int>(255, regs + (idx64 ? 12 : 0));
      // Element loads hold more per-thread state; near a launch bound's limit ptxas may
      // trade a few bytes of spills for the occupancy promised. The 128x128 tiles spill a
      // little in tf32 (twice the fragment registers) and in split-K (a k range known only at
      // run time): at their bounds ptxas spilled sm_90 instances of both (resnet18 b8: 108-296
      // bytes of spill loads; models_compile found a 128x128 w2x4 split-K conv).
      v.promises_no_spills = vec_a && !(pre90 && tile.spills_pre90) &&
                             !((es == 4 || split || in_kernel) && tile.bm * tile.bn >= 128 * 128);
      v.flops = 2.0 * double(M) * double(O) * double(K);
      v.bytes = bytes;
      v.math = math;
      // The tile's shape prices itself through its main loop's ceilings; the efficiency
      // keeps what lies outside the loop and the work the tiles' padding wastes.
      IgemmTile looped = tile;
      looped.frag_buffers = frag_buffers;
      v.loop =
          igemm_main_loop({looped, int(es), stages, vec_a, vec_b, kLdmatrix, b_tf32, gate, a_tf32});
      // On Hopper the descriptor's peak is wgmma's; mma.sync (HMMA) reaches about a third of
      // it (measured, above; FlashAttention-2 reaches 35% of an H100's peak).
      if (s.gpu.compute_capability() >= 90) v.loop.peak_fraction = kMmaSyncShareOfWgmmaPeak;
      v.efficiency =
          kOutsideLoopEfficiency * tile_utilisation(M, O, (K + S - 1) / S, tile.bm, tile.bn, bk);
      v.note = fmt::format(
          "implicit GEMM M={} N={} K={}: {}x{}x{} block tile, {}x{} warps of {}x{} mma.sync "
          "{}, {} shared stages{}, {} loads{}, {} fragments{} from {} rows{}",
          M, O, K, tile.bm, tile.bn, bk, tile.wm, tile.wn, tile.bm / tile.wm, tile.bn / tile.wn,
          math_name(math), stages, cc >= 80 ? " (cp.async)" : "",
          vec_a   ? "16-byte"
          : vec_b ? "element (x) and 16-byte (w)"
                  : "element",
          gate ? (vec_a ? " (x scaled by its gate where it lands)" : " (x scaled by its gate)")
               : "",
          kLdmatrix ? "ldmatrix" : "32-bit shared load",
          frag_buffers == 2 ? " (double-buffered)" : "", kSwizzle ? "swizzled" : "padded",
          split ? fmt::format("; split-K: {} ranges of k into fp32 partial sums", S)
          : in_kernel
              ? fmt::format("; split-K: {} ranges of k, the last block of a tile adds them in "
                            "order and applies the epilogue",
                            S)
              : "");
      out.push_back(std::move(v));
    }
  return out;
}

} // namespace kiln
