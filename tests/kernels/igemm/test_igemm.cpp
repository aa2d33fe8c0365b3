// The implicit-GEMM convolution family: every variant compiles for sm_75 (f16), sm_80 and
// sm_90 (without spills where it promises none), and every tile configuration matches the
// f64 reference on the emulator over awkward shapes (C not a multiple of 8, odd images,
// strides, padding, dilation, O and M not multiples of the tile, M below one tile) in f16,
// bf16 and f32 (tf32), with ldmatrix and with 32-bit shared loads.
#include "tests/kernels/harness.hpp"

#include "generator/select/families/igemm/implicit_gemm.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <map>
#include <set>

using namespace kiln;
using namespace kiln::test;

namespace {

struct Conv {
  int64_t n, c, h, w, o;
  Int2 k, s = {1, 1}, p = {0, 0}, d = {1, 1};
  bool bias = false, residual = false, relu = false;
};

int64_t out_extent(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d) {
  return (in + 2 * p - d * (k - 1) - 1) / s + 1;
}

StepSpec conv_spec(const std::string& label, const Conv& cv, DType t) {
  Attrs a;
  a.out_channels = cv.o;
  a.kernel = cv.k;
  a.stride = cv.s;
  a.padding = cv.p;
  a.dilation = cv.d;
  a.bias = cv.bias;
  const Shape y{cv.n, cv.o, out_extent(cv.h, cv.k[0], cv.s[0], cv.p[0], cv.d[0]),
                out_extent(cv.w, cv.k[1], cv.s[1], cv.p[1], cv.d[1])};
  StepSpec s{label + " " + std::string(dtype_name(t)), Fn::conv2d_forward, OpKind::conv2d, a, {}};
  s.args.push_back({"x", {cv.n, cv.c, cv.h, cv.w}, t, Layout::nhwc});
  s.args.push_back({"w", {cv.o, cv.c, cv.k[0], cv.k[1]}, t, Layout::nhwc});
  if (cv.bias) s.args.push_back({"b", {cv.o}, t});
  if (cv.residual) s.args.push_back({"residual", y, t, Layout::nhwc});
  s.args.push_back({"y", y, t, Layout::nhwc});
  s.epilogue.activation = cv.relu ? Activation::relu : Activation::none;
  return s;
}

// Shapes for the emulator: small, each awkward in its own way.
const std::vector<std::pair<std::string, Conv>>& emu_convs() {
  static const std::vector<std::pair<std::string, Conv>> c = {
      {"stem c3 7x7 s2 p3 odd",
       {1, 3, 15, 15, 24, {7, 7}, {2, 2}, {3, 3}, {1, 1}, true, false, true}},
      {"c12 3x3 p1 o40", {2, 12, 9, 9, 40, {3, 3}, {1, 1}, {1, 1}, {1, 1}, true, false, true}},
      {"c16 1x1 residual o24",
       {2, 16, 7, 7, 24, {1, 1}, {1, 1}, {0, 0}, {1, 1}, false, true, true}},
      {"c8 3x3 d2 p2 odd o17",
       {1, 8, 11, 11, 17, {3, 3}, {1, 1}, {2, 2}, {2, 2}, true, true, false}},
      {"c32 3x3 s2 p1 m<tile",
       {1, 32, 13, 13, 64, {3, 3}, {2, 2}, {1, 1}, {1, 1}, false, false, false}},
      {"c24 1x1 s2 o40", {2, 24, 9, 9, 40, {1, 1}, {2, 2}, {0, 0}, {1, 1}, true, false, false}},
      {"c64 3x3 deep k o72", {1, 64, 6, 6, 72, {3, 3}, {1, 1}, {1, 1}, {1, 1}, true, true, true}},
      {"c4 3x1 s2x1 p1x0 o20",
       {2, 4, 9, 7, 20, {3, 1}, {2, 1}, {1, 0}, {1, 1}, false, false, true}},
      {"c16 5x5 p0 o136", {1, 16, 10, 10, 136, {5, 5}, {1, 1}, {0, 0}, {1, 1}, true, false, false}},
      {"c6 2x2 s2 o33", {2, 6, 8, 10, 33, {2, 2}, {2, 2}, {0, 0}, {1, 1}, true, true, true}},
  };
  return c;
}

// Shapes for NVRTC, with the whole epilogue: each load path (16-byte, 16-byte weights only,
// element loads), odd O, and 64-bit offsets.
const std::vector<std::pair<std::string, Conv>>& nvrtc_convs() {
  static const std::vector<std::pair<std::string, Conv>> c = {
      {"c64 3x3", {8, 64, 28, 28, 128, {3, 3}, {1, 1}, {1, 1}, {1, 1}, true, true, true}},
      {"c12 3x3", {8, 12, 28, 28, 40, {3, 3}, {1, 1}, {1, 1}, {1, 1}, true, true, true}},
      {"c3 7x7 s2", {8, 3, 224, 224, 64, {7, 7}, {2, 2}, {3, 3}, {1, 1}, true, true, true}},
      {"c6 2x2 s2 o33", {8, 6, 64, 64, 33, {2, 2}, {2, 2}, {0, 0}, {1, 1}, true, true, true}},
      {"c64 3x3 2^31 elements",
       {160, 64, 512, 512, 64, {3, 3}, {1, 1}, {1, 1}, {1, 1}, true, true, true}},
  };
  return c;
}

constexpr DType kTypes[] = {DType::f16, DType::bf16, DType::f32};

std::vector<Built> ours(std::vector<Built> all) {
  std::vector<Built> r;
  for (Built& b : all)
    if (b.variant.family == "conv2d_implicit_gemm") r.push_back(std::move(b));
  return r;
}

// The tile configuration part of a variant name: "128x64x32_w2x2".
std::string tile_of(const Variant& v) {
  const size_t at = v.name.find("_nhwc_") + 6;
  return v.name.substr(at, v.name.find("_s", at) - at);
}

// The variant with LDMATRIX off: fragments by 32-bit shared loads.
Built with_shared_loads(Built b) {
  CfgValue* ldmatrix = find_cfg(b.variant, "LDMATRIX");
  REQUIRE(ldmatrix);
  *ldmatrix = false;
  const size_t at = b.variant.name.find("_ldm");
  REQUIRE(at != std::string::npos);
  b.variant.name.replace(at, 4, "_lds");
  return b;
}

// The variant with its shared rows padded by 4 words instead of swizzled (the generator's
// rows are swizzled): the other conflict-free layout, kept working for comparison.
Built with_padded_rows(Built b) {
  CfgValue* swizzle = find_cfg(b.variant, "SWIZZLE");
  CfgValue* pad = find_cfg(b.variant, "PAD");
  REQUIRE((swizzle && pad));
  *swizzle = false;
  *pad = int64_t(4);
  const size_t at = b.variant.name.find("_swz_");
  REQUIRE(at != std::string::npos);
  b.variant.name.replace(at, 5, "_pad4_");
  // 16 words a row become 20.
  b.variant.dynamic_smem = std::max(b.variant.dynamic_smem, b.variant.dynamic_smem / 16 * 20);
  return b;
}

} // namespace

TEST_CASE("implicit GEMM variants compile with NVRTC for sm_75, sm_80 and sm_90") {
  std::vector<StepSpec> specs;
  for (DType t : kTypes)
    for (const auto& [label, cv] : nvrtc_convs())
      specs.push_back(conv_spec(label, cv, t));
  const auto built = ours(all_variants(specs, {"t4", "a100", "h200"}));
  std::map<std::string, int> per_gpu;
  for (const Built& b : built)
    ++per_gpu[b.gpu + " " + dtype_tag(b.spec.args[0].dtype)];
  CHECK(per_gpu["t4 bf16"] == 0);
  CHECK(per_gpu["t4 f32"] == 0);
  for (const char* g : {"t4", "a100", "h200"})
    for (DType t : kTypes) {
      if (std::string(g) == "t4" && t != DType::f16) continue;
      CHECK(per_gpu[std::string(g) + " " + dtype_tag(t)] >= 3 * int64_t(nvrtc_convs().size()));
    }
  for (const std::string& f : nvrtc_failures(built))
    FAIL_CHECK(f);
}

TEST_CASE("implicit GEMM variants match the reference on the emulator") {
  // Every shape in every precision, each on two of the tiles offered for it, rotating over
  // the shapes so that every (precision, tile) pair runs on at least two shapes.
  std::vector<StepSpec> specs;
  for (DType t : kTypes)
    for (const auto& [label, cv] : emu_convs())
      specs.push_back(conv_spec(label, cv, t));
  std::map<std::string, std::vector<Built>> per_spec;
  for (Built& b : ours(all_variants(specs, {"h200"})))
    per_spec[b.spec.label].push_back(std::move(b));
  std::vector<Built> chosen;
  std::map<std::string, int> runs; // "dtype tile" -> shapes
  for (size_t i = 0; i < specs.size(); ++i) {
    std::vector<Built>& vs = per_spec[specs[i].label];
    REQUIRE_MESSAGE(vs.size() >= 2, specs[i].label);
    for (size_t pick : {i % vs.size(), (i + 2) % vs.size()}) {
      ++runs[dtype_tag(vs[pick].spec.args[0].dtype) + " " + tile_of(vs[pick].variant)];
      chosen.push_back(vs[pick]);
    }
    // The 32-bit shared-load fragment path (the variants use ldmatrix) on every third.
    if (i % 3 == 0) chosen.push_back(with_shared_loads(vs[(i + 1) % vs.size()]));
    // Padded rows instead of swizzled ones, with either fragment path, on every third.
    if (i % 3 == 1) {
      Built padded = with_padded_rows(vs[(i + 1) % vs.size()]);
      chosen.push_back(i % 2 ? padded : with_shared_loads(padded));
    }
  }
  for (DType t : kTypes)
    for (const IgemmTile& tl : igemm_tiles()) {
      const std::string key = dtype_tag(t) + " " + std::to_string(tl.bm) + "x" +
                              std::to_string(tl.bn) + "x" + std::to_string(64 / dtype_size(t)) +
                              "_w" + std::to_string(tl.wm) + "x" + std::to_string(tl.wn);
      CHECK_MESSAGE(runs[key] >= 2, key);
    }
  for (const KernelCheck& r : emu_checks(chosen, temp_dir("kiln-igemm"))) {
    INFO(r.node << ": " << r.kernel << " rel " << r.rel << " " << r.error);
    CHECK(r.pass);
  }
}

namespace {

// The same convolutions with x stored NCHW (a network's input, or a folded batch's view of
// it, read in place by the first conv of an NHWC network): the X_NCHW variants only.
std::vector<Built> nchw_input_variants(const std::vector<std::string>& gpus) {
  std::vector<StepSpec> specs;
  for (DType t : kTypes)
    for (const auto& [label, cv] : emu_convs()) {
      if (cv.residual) continue;
      StepSpec s = conv_spec(label + " x nchw", cv, t);
      s.args[0].layout = Layout::nchw;
      specs.push_back(s);
    }
  std::vector<Built> built = ours(all_variants(specs, gpus));
  std::erase_if(
      built, [](const Built& b) { return b.variant.name.find("_ldnchw_") == std::string::npos; });
  return built;
}

} // namespace

TEST_CASE("planted bug: the emulator reports implicit GEMM rows neither swizzled nor padded (bank "
          "conflicts)") {
  // 16-word rows put rows r and r + 2 of an ldmatrix on the same banks; the emulator's bank
  // check reports it (the swizzled and padded variants above pass the same check).
  std::vector<StepSpec> specs = {conv_spec("c32 3x3", emu_convs()[4].second, DType::f16)};
  std::vector<Built> built = ours(all_variants(specs, {"h200"}));
  REQUIRE(!built.empty());
  Built b = with_padded_rows(built[0]);
  *find_cfg(b.variant, "PAD") = int64_t(0);
  b.variant.name.replace(b.variant.name.find("_pad4_"), 6, "_pad0_");
  b.variant.dynamic_smem = built[0].variant.dynamic_smem;
  const std::vector<KernelCheck> r = emu_checks({b}, temp_dir("kiln-igemm-banks"));
  REQUIRE(r.size() == 1);
  INFO(r[0].error);
  CHECK_FALSE(r[0].pass);
  CHECK(r[0].error.find("bank conflict: ldmatrix") != std::string::npos);
}

TEST_CASE("implicit GEMM reading an NCHW x compiles with NVRTC for sm_80 and sm_90") {
  const auto built = nchw_input_variants({"a100", "h200"});
  CHECK(built.size() >= 10);
  for (const std::string& f : nvrtc_failures(built))
    FAIL_CHECK(f);
}

TEST_CASE("implicit GEMM reading an NCHW x matches the reference on the emulator") {
  // One tile per shape and precision (the loader is the only difference).
  std::vector<Built> chosen;
  std::set<std::string> seen;
  for (Built& b : nchw_input_variants({"h200"}))
    if (seen.insert(b.spec.label).second) chosen.push_back(std::move(b));
  CHECK(chosen.size() >= 10);
  for (const KernelCheck& r : emu_checks(chosen, temp_dir("kiln-igemm-nchw"))) {
    INFO(r.node << ": " << r.kernel << " rel " << r.rel << " " << r.error);
    CHECK(r.pass);
  }
}

namespace {

// Linear layers through the same template (x [N, F] as [N, 1, 1, F], w [K, F] as [K, 1, 1, F]).
std::vector<Built> linear_variants(const std::vector<std::string>& gpus) {
  std::vector<StepSpec> specs;
  for (DType t : kTypes)
    for (auto [n, f, k, bias, relu] :
         {std::tuple{8, 40, 24, true, true}, std::tuple{5, 33, 17, false, false},
          std::tuple{64, 256, 10, true, false}}) {
      Attrs a;
      a.out_features = k;
      a.bias = bias;
      StepSpec s{fmt::format("linear {}x{}->{}{}{} {}", n, f, k, bias ? " bias" : "",
                             relu ? " relu" : "", dtype_name(t)),
                 Fn::linear_forward,
                 OpKind::linear,
                 a,
                 {}};
      s.args = {{"x", {n, f}, t}, {"w", {k, f}, t}};
      if (bias) s.args.push_back({"b", {k}, t});
      s.args.push_back({"y", {n, k}, t});
      s.epilogue.activation = relu ? Activation::relu : Activation::none;
      specs.push_back(s);
    }
  std::vector<Built> built = all_variants(specs, gpus);
  std::erase_if(built, [](const Built& b) { return b.variant.family != "linear_implicit_gemm"; });
  return built;
}

} // namespace

TEST_CASE("implicit GEMM serving linear layers compiles with NVRTC for sm_80 and sm_90") {
  std::vector<Built> built = linear_variants({"a100", "h200"});
  std::set<std::string> seen; // one tile per layer and GPU: the loaders are the conv's
  std::erase_if(built, [&](const Built& b) { return !seen.insert(b.spec.label + b.gpu).second; });
  CHECK(built.size() >= 12);
  for (const std::string& f : nvrtc_failures(built))
    FAIL_CHECK(f);
}

TEST_CASE("implicit GEMM serving linear layers matches the reference on the emulator") {
  std::vector<Built> chosen;
  std::map<std::string, int> per;
  for (Built& b : linear_variants({"h200"}))
    if (per[b.spec.label]++ < 2) chosen.push_back(std::move(b));
  CHECK(chosen.size() >= 12);
  for (const KernelCheck& r : emu_checks(chosen, temp_dir("kiln-igemm-linear"))) {
    INFO(r.node << ": " << r.kernel << " rel " << r.rel << " " << r.error);
    CHECK(r.pass);
  }
}

namespace {

// Split-K: the conv or linear into S fp32 partial sums (no epilogue), and partial.sum
// completing it with the epilogue; K ranges not multiples of BK, a last range shorter than
// the rest, S up to ceil(K / 16).
std::vector<StepSpec> split_k_specs() {
  std::vector<StepSpec> specs;
  const std::vector<std::tuple<std::string, Conv, int64_t>> convs = {
      {"c40 3x3 p1 o24 s3", {2, 40, 5, 5, 24, {3, 3}, {1, 1}, {1, 1}}, 3},
      {"c55 3x3 p1 o55 s4 odd", {1, 55, 4, 3, 55, {3, 3}, {1, 1}, {1, 1}}, 4},
      {"c64 1x1 o72 s2", {2, 64, 3, 3, 72, {1, 1}}, 2},
      {"c12 5x5 s2 p2 o17 s6", {1, 12, 9, 7, 17, {5, 5}, {2, 2}, {2, 2}}, 6},
  };
  for (DType t : kTypes) {
    for (const auto& [label, cv, slices] : convs) {
      StepSpec s = conv_spec(label + " partial", cv, t);
      s.fn = Fn::conv2d_forward_partial;
      ArgSpec y = s.args.back();
      s.args.pop_back();
      y.role = "partial";
      y.shape[0] *= slices;
      y.dtype = DType::f32;
      s.args.push_back(y);
      specs.push_back(s);
    }
    for (auto [n, f, k, slices] : {std::tuple{3, 200, 24, 4}, std::tuple{5, 72, 17, 3}}) {
      Attrs a;
      a.out_features = k;
      StepSpec s{fmt::format("linear {}x{}->{} partial s{} {}", n, f, k, slices, dtype_name(t)),
                 Fn::linear_forward_partial,
                 OpKind::linear,
                 a,
                 {}};
      s.args = {{"x", {n, f}, t}, {"w", {k, f}, t}, {"partial", {slices * n, k}, DType::f32}};
      specs.push_back(s);
    }
  }
  return specs;
}

// partial.sum with a forward step's epilogue: bias per channel in NHWC, NCHW and [N, K],
// residual, relu.
std::vector<StepSpec> split_sum_specs() {
  std::vector<StepSpec> specs;
  for (DType t : kTypes)
    for (auto [layout, rank, bias, residual, relu] :
         {std::tuple{Layout::nhwc, 4, true, true, true},
          std::tuple{Layout::nchw, 4, true, false, true},
          std::tuple{Layout::nhwc, 4, false, true, false},
          std::tuple{Layout::nchw, 2, true, false, false}}) {
      const Shape y = rank == 4 ? Shape{2, 24, 3, 5} : Shape{6, 24};
      Shape partial = y;
      partial[0] *= 3;
      StepSpec s;
      s.label = fmt::format("partial.sum 3 of {} {}{}{}{} {}", shape_str(y),
                            rank == 4 ? layout_name(layout) : "", bias ? " bias" : "",
                            residual ? " residual" : "", relu ? " relu" : "", dtype_name(t));
      s.fn = Fn::partial_sum;
      s.args = {{"partial", partial, DType::f32, layout}};
      if (bias) s.args.push_back({"b", {24}, t});
      if (residual) s.args.push_back({"residual", y, t, layout});
      s.args.push_back({"dst", y, t, layout});
      s.epilogue.activation = relu ? Activation::relu : Activation::none;
      specs.push_back(s);
    }
  return specs;
}

} // namespace

TEST_CASE("split-K implicit GEMM and its partial.sum compile with NVRTC for sm_80 and sm_90") {
  std::vector<StepSpec> specs = split_k_specs();
  for (StepSpec& s : split_sum_specs())
    specs.push_back(std::move(s));
  std::vector<Built> built = all_variants(specs, {"a100", "h200"});
  std::set<std::string> seen; // one tile per layer and GPU
  std::erase_if(built, [&](const Built& b) { return !seen.insert(b.spec.label + b.gpu).second; });
  CHECK(built.size() == specs.size() * 2);
  for (const Built& b : built)
    if (b.spec.fn != Fn::partial_sum) CHECK(b.variant.name.find("_split") != std::string::npos);
  for (const std::string& f : nvrtc_failures(built))
    FAIL_CHECK(f);
}

TEST_CASE("split-K implicit GEMM and its partial.sum match the reference on the emulator") {
  std::vector<StepSpec> specs = split_k_specs();
  for (StepSpec& s : split_sum_specs())
    specs.push_back(std::move(s));
  std::vector<Built> chosen;
  std::map<std::string, int> per;
  std::vector<std::string> unserved;
  for (Built& b : all_variants(specs, {"h200"}, &unserved))
    if (per[b.spec.label]++ < 2) chosen.push_back(std::move(b));
  CHECK(unserved.empty());
  CHECK(per.size() == specs.size());
  for (const KernelCheck& r : emu_checks(chosen, temp_dir("kiln-igemm-split"))) {
    INFO(r.node << ": " << r.kernel << " rel " << r.rel << " " << r.error);
    CHECK(r.pass);
  }
}

namespace {

// conv2d.pool_forward on tensor cores: ConvN's pools (3/2, 3/1) after 3x3 convs, 2/2, pool
// padding, ceil_mode (a last window past the image), footprints that leave rows of the
// block tile unused, O not a multiple of the tile, an NCHW input.
std::vector<StepSpec> pooled_specs() {
  struct Case {
    std::string label;
    Conv cv;
    Int2 k, s, p;
    bool ceil;
  };
  const std::vector<Case> cases = {
      {"convn c32 p3s2",
       {2, 32, 11, 13, 32, {3, 3}, {1, 1}, {1, 1}, {1, 1}, true, false, true},
       {3, 3},
       {2, 2},
       {0, 0},
       false},
      {"convn c40 p3s1 o45",
       {1, 40, 9, 7, 45, {3, 3}, {1, 1}, {1, 1}, {1, 1}, true, false, true},
       {3, 3},
       {1, 1},
       {0, 0},
       false},
      {"c16 p2s2",
       {2, 16, 8, 10, 24, {3, 3}, {1, 1}, {1, 1}, {1, 1}, false, false, false},
       {2, 2},
       {2, 2},
       {0, 0},
       false},
      {"c24 p3s2 pad1 ceil",
       {1, 24, 9, 11, 40, {1, 1}, {1, 1}, {0, 0}, {1, 1}, true, false, true},
       {3, 3},
       {2, 2},
       {1, 1},
       true},
  };
  std::vector<StepSpec> specs;
  for (DType t : kTypes)
    for (const Case& c : cases) {
      StepSpec s = conv_spec(c.label, c.cv, t);
      s.fn = Fn::conv2d_pool_forward;
      Attrs pool;
      pool.kernel = c.k, pool.stride = c.s, pool.padding = c.p, pool.ceil_mode = c.ceil;
      s.params = FusedPool{pool};
      const Shape y = s.args.back().shape;
      s.args.back().shape = infer_shape(OpKind::maxpool2d, pool, std::span<const Shape>(&y, 1));
      specs.push_back(s);
    }
  StepSpec nchw = specs.front(); // a network's NCHW input read in place
  nchw.label += " x-nchw";
  nchw.args[0].layout = Layout::nchw;
  specs.push_back(nchw);
  return specs;
}

std::vector<Built> pooled_variants(const std::vector<std::string>& gpus) {
  std::vector<Built> built = all_variants(pooled_specs(), gpus);
  std::erase_if(built, [](const Built& b) { return b.variant.family != "conv2d_implicit_gemm"; });
  return built;
}

} // namespace

TEST_CASE("implicit GEMM with a fused max pool compiles with NVRTC for sm_75, sm_80 and sm_90") {
  std::vector<Built> built = pooled_variants({"t4", "a100", "h200"});
  std::set<std::string> seen; // two tiles per layer and GPU
  std::map<std::string, int> per;
  std::erase_if(built, [&](const Built& b) { return per[b.spec.label + b.gpu]++ >= 2; });
  for (const Built& b : built)
    seen.insert(b.spec.label);
  // f32 has no tensor-core math on sm_75; every other spec is served on every GPU.
  CHECK(seen.size() == pooled_specs().size());
  for (const std::string& f : nvrtc_failures(built))
    FAIL_CHECK(f);
}

TEST_CASE("implicit GEMM with a fused max pool matches the reference on the emulator") {
  std::vector<Built> built = pooled_variants({"h200"});
  std::map<std::string, int> per;
  std::erase_if(built, [&](const Built& b) { return per[b.spec.label]++ >= 2; });
  CHECK(per.size() == pooled_specs().size());
  for (const KernelCheck& r : emu_checks(built, temp_dir("kiln-igemm-pool"))) {
    INFO(r.node << ": " << r.kernel << " rel " << r.rel << " " << r.error);
    CHECK(r.pass);
  }
}
