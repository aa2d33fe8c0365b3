// A squeeze-excite gate fused into the implicit GEMM (conv/igemm/load_global.cuh's GATE;
// generator/rewrite/gates.cpp): x read as x * gate[n][c]. The gated variants compile with
// NVRTC for sm_75 and sm_90 within their tiles' registers; they match the f64
// reference on the emulator in f16, bf16 and f32 (tf32) on both load paths (16-byte copies
// scaled where they land, element loads scaled in registers, NHWC and NCHW x), with padding,
// the epilogue and split-K (in the kernel and in two steps); the result is bit for bit the
// unfused plan's (the mul kernel, then the conv); no family that ignores the gate is offered
// for a gated step; and a variant that drops the gate fails its check.
#include "tests/kernels/harness.hpp"

#include "generator/compile/compile_dir.hpp"
#include "runtime/tensor.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <map>
#include <set>

using namespace kiln;
using namespace kiln::test;

namespace {

constexpr DType kTypes[] = {DType::f16, DType::bf16, DType::f32};

struct Case {
  std::string label;
  int64_t n, c, h, w, o, k, pad;
  bool bias, residual, relu;
  Layout x_layout = Layout::nhwc;
};

// 1x1 projections as squeeze-excite blocks have them (C a multiple of 8: 16-byte copies), a
// 3x3 with padding (zero-filled chunks stay zero), C = 12 (element loads), M below a tile,
// and x NCHW (element loads from an NCHW plan).
const std::vector<Case>& cases() {
  static const std::vector<Case> c = {
      {"se c32 1x1 o24 res", 2, 32, 5, 5, 24, 1, 0, true, true, false},
      {"se c64 1x1 o40", 2, 64, 3, 4, 40, 1, 0, false, false, true},
      {"c16 3x3 p1 o17", 2, 16, 6, 5, 17, 3, 1, true, false, true},
      {"c12 1x1 o20 element", 2, 12, 4, 4, 20, 1, 0, true, true, false},
      {"c8 3x3 p1 o16 nchw", 2, 8, 5, 5, 16, 3, 1, true, false, true, Layout::nchw},
  };
  return c;
}

Shape y_shape(const Case& c) {
  return {c.n, c.o, c.h + 2 * c.pad - c.k + 1, c.w + 2 * c.pad - c.k + 1};
}

Attrs conv_attrs(const Case& c) {
  Attrs a;
  a.out_channels = c.o;
  a.kernel = {c.k, c.k};
  a.padding = {c.pad, c.pad};
  a.bias = c.bias;
  return a;
}

// conv2d.forward: x, w, [b], [residual], gate -> y.
StepSpec gated_spec(const Case& c, DType t, bool gate = true) {
  StepSpec s{c.label + (gate ? " gated " : " ") + std::string(dtype_name(t)),
             Fn::conv2d_forward,
             OpKind::conv2d,
             conv_attrs(c),
             {}};
  const Shape y = y_shape(c);
  s.args.push_back({"x", {c.n, c.c, c.h, c.w}, t, c.x_layout});
  s.args.push_back({"w", {c.o, c.c, c.k, c.k}, t, Layout::nhwc});
  if (c.bias) s.args.push_back({"b", {c.o}, t});
  if (c.residual) s.args.push_back({"residual", y, t, Layout::nhwc});
  if (gate) s.args.push_back({"gate", {c.n, c.c, 1, 1}, t, c.x_layout});
  s.args.push_back({"y", y, t, Layout::nhwc});
  s.epilogue.activation = c.relu ? Activation::relu : Activation::none;
  return s;
}

// The split-K forms of the first case: in the kernel (S = 2) and the raw slices.
std::vector<StepSpec> split_specs(DType t) {
  const Case& c = cases()[1]; // K = 64: two ranges of 32
  const Shape y = y_shape(c);
  Shape partial = y;
  partial[0] *= 2;
  StepSpec in{c.label + " gated in-kernel split " + std::string(dtype_name(t)),
              Fn::conv2d_forward_split,
              OpKind::conv2d,
              conv_attrs(c),
              {}};
  in.args = {{"x", {c.n, c.c, c.h, c.w}, t, Layout::nhwc},
             {"w", {c.o, c.c, 1, 1}, t, Layout::nhwc},
             {"gate", {c.n, c.c, 1, 1}, t, Layout::nhwc},
             {"tickets", {16}, DType::i32},
             {"y", y, t, Layout::nhwc},
             {"partial", partial, DType::f32, Layout::nhwc}};
  in.epilogue.activation = Activation::relu;
  StepSpec part{c.label + " gated partial " + std::string(dtype_name(t)),
                Fn::conv2d_forward_partial,
                OpKind::conv2d,
                conv_attrs(c),
                {}};
  part.attrs.bias = false;
  part.args = {in.args[0], in.args[1], in.args[2], in.args[5]};
  return {in, part};
}

std::vector<Built> gated_variants(const std::vector<std::string>& gpus) {
  std::vector<StepSpec> specs;
  for (DType t : kTypes) {
    for (const Case& c : cases())
      specs.push_back(gated_spec(c, t));
    for (const StepSpec& s : split_specs(t))
      specs.push_back(s);
  }
  return all_variants(specs, gpus);
}

} // namespace

TEST_CASE("gated steps for the emulator: only the variants that read the gate are offered") {
  const std::vector<Built> built = gated_variants({"t4", "a100", "h200"});
  std::set<std::string> served;
  for (const Built& b : built) {
    INFO(b.variant.name);
    CHECK(b.variant.family == "conv2d_implicit_gemm");
    CHECK(b.variant.name.find("_gate") != std::string::npos);
    CHECK(b.variant.args.back() == "gate");
    served.insert(b.spec.label + " " + b.gpu);
  }
  // sm_80 and sm_90 serve every gated step in every type; sm_75 the f16 ones.
  CHECK(served.size() == 2 * 3 * (cases().size() + 2) + (cases().size() + 2));
  // A depthwise conv has no gate-reading family: nothing is offered.
  Case dw = cases()[2];
  StepSpec s = gated_spec(dw, DType::f16);
  s.attrs.groups = dw.c;
  s.attrs.out_channels = dw.c;
  s.args[1].shape = {dw.c, 1, 3, 3};
  s.args[2].shape = {dw.c};      // b
  s.args.back().shape[1] = dw.c; // y
  CHECK(all_variants({s}, {"h200"}).empty());
}

TEST_CASE("gated implicit GEMM variants compile with NVRTC for sm_75 and sm_90") {
  std::vector<Built> built = gated_variants({"t4", "h200"});
  // Every tile for the first case on sm_90; one tile per other step and GPU.
  std::set<std::string> seen;
  std::erase_if(built, [&](const Built& b) {
    const bool all_tiles = b.gpu == "h200" && b.spec.label.rfind(cases()[0].label, 0) == 0;
    return !seen.insert(b.spec.label + b.gpu).second && !all_tiles;
  });
  CHECK(seen.size() == 3 * (cases().size() + 2) + (cases().size() + 2));
  CHECK(built.size() >= seen.size() + 3 * 4);
  for (const std::string& f : nvrtc_failures(built))
    FAIL_CHECK(f);
}

TEST_CASE("gated implicit GEMM matches the reference on the emulator") {
  // Each step on its largest and its smallest tile.
  std::map<std::string, std::vector<Built>> per;
  for (Built& b : gated_variants({"h200"}))
    per[b.spec.label].push_back(std::move(b));
  CHECK(per.size() == 3 * (cases().size() + 2));
  std::vector<Built> chosen;
  for (auto& [label, all] : per) {
    chosen.push_back(all.front());
    if (all.size() > 1) chosen.push_back(all.back());
  }
  for (const KernelCheck& r : emu_checks(chosen, temp_dir("kiln-igemm-gate"))) {
    INFO(r.node << ": " << r.kernel << " rel " << r.rel << " " << r.error);
    CHECK(r.pass);
  }
}

TEST_CASE("planted bug: the emulator check fails a gated implicit GEMM that ignores its gate") {
  std::vector<Built> built = all_variants({gated_spec(cases()[0], DType::f16)}, {"h200"});
  REQUIRE(!built.empty());
  Built b = built[0];
  CfgValue* gate = find_cfg(b.variant, "GATE");
  REQUIRE(gate);
  *gate = false;
  b.variant.name += "_ungated";
  const std::vector<KernelCheck> r = emu_checks({b}, temp_dir("kiln-igemm-gate-planted"));
  REQUIRE(r.size() == 1);
  CHECK_FALSE(r[0].pass);
}

TEST_CASE("a gated conv on the emulator is bit for bit the mul kernel and the conv apart") {
  for (DType t : kTypes)
    for (size_t ci : {size_t(0), size_t(3)}) { // 16-byte copies, element loads
      const Case& c = cases()[ci];
      const StepSpec gated = gated_spec(c, t), plain = gated_spec(c, t, false);
      StepSpec mul{c.label + " mul " + std::string(dtype_name(t)),
                   Fn::mul_forward,
                   OpKind::mul,
                   Attrs{},
                   {}};
      mul.args = {{"x0", {c.n, c.c, c.h, c.w}, t, Layout::nhwc},
                  {"x1", {c.n, c.c, 1, 1}, t, Layout::nhwc},
                  {"y", {c.n, c.c, c.h, c.w}, t, Layout::nhwc}};
      // The gated kernel, and the same tile without the gate.
      std::vector<Built> gv = all_variants({gated}, {"h200"});
      REQUIRE(!gv.empty());
      const std::string tile = gv[0].variant.name.substr(0, gv[0].variant.name.find("_swz_"));
      std::vector<Built> pv = all_variants({plain}, {"h200"});
      std::erase_if(pv, [&](const Built& b) { return b.variant.name.rfind(tile, 0) != 0; });
      std::vector<Built> mv = all_variants({mul}, {"h200"});
      REQUIRE((!pv.empty() && !mv.empty()));
      INFO(gv[0].variant.name << " against " << pv[0].variant.name << " after "
                              << mv[0].variant.name);
      const std::vector<Built> built = {gv[0], pv[0], mv[0]};
      const std::string dir = temp_dir("kiln-igemm-gate-bits");
      emu_library(built, dir);
      const std::string lib = emu_library_path(dir);
      const std::map<std::string, Tensor> in = random_inputs(gv[0], 11);
      const Tensor fused = emu_run(gv[0], lib, in, "y");
      const Tensor gated_x = emu_run(mv[0], lib, {{"x0", in.at("x")}, {"x1", in.at("gate")}}, "y");
      std::map<std::string, Tensor> plain_in = in;
      plain_in.erase("gate");
      plain_in.insert_or_assign("x", gated_x);
      const Tensor apart = emu_run(pv[0], lib, plain_in, "y");
      CHECK(bytes_of(fused) == bytes_of(apart));
    }
}
