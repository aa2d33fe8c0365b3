// Split-K completed inside the Hopper conv (conv2d.forward_split and linear.forward_split on
// conv2d_hopper_wgmma; templates/conv/hopper/split_reduce.cuh): the variants the family offers
// for a few layers on the h100 (pixel, im2col and flat tiles, one and two consumers, BN 64 and
// 128, ranges of k that do not divide the stages evenly, f16, bf16 and tf32 with its rounding
// pass, an odd O's register epilogue, a linear layer) match the f64 reference on the emulator
// with every check on and leave their tile counters at zero; a run on one worker and on three
// (the tiles' units arrive in other orders) gives the same bits; they compile with NVRTC for
// sm_90a without local memory, showing HGMMA and TMA loads and no HMMA.
#include "tests/kernels/harness.hpp"

#include "generator/compile/compile_dir.hpp"
#include "runtime/emu/backend.hpp"
#include "tests/kernels/hopper/sm90a_compile.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <map>
#include <set>

using namespace kiln;
using namespace kiln::test;

namespace {

constexpr const char* kFamily = "conv2d_hopper_wgmma";

// conv2d.forward_split of x [n, c, h, w] NHWC -> o channels over `slices` ranges of k.
StepSpec conv_split(int64_t n, int64_t c, int64_t h, int64_t w, int64_t o, int64_t k, int64_t s,
                    int64_t p, DType t, int64_t slices, bool residual) {
  Attrs a;
  a.out_channels = o, a.kernel = {k, k}, a.stride = {s, s}, a.padding = {p, p}, a.bias = true;
  const int64_t oh = (h + 2 * p - k) / s + 1, ow = (w + 2 * p - k) / s + 1;
  StepSpec sp;
  sp.label = fmt::format("split {}x{}x{}x{}->{} k{} s{} p{} {} S{}{}", n, c, h, w, o, k, s, p,
                         dtype_name(t), slices, residual ? " res" : "");
  sp.fn = Fn::conv2d_forward_split;
  sp.op = OpKind::conv2d;
  sp.attrs = a;
  const Shape y = {n, o, oh, ow};
  Shape partial = y;
  partial[0] *= slices;
  sp.args = {
      {"x", {n, c, h, w}, t, Layout::nhwc}, {"w", {o, c, k, k}, t, Layout::nhwc}, {"b", {o}, t}};
  if (residual) sp.args.push_back({"residual", y, t, Layout::nhwc});
  sp.args.push_back({"tickets", {64}, DType::i32});
  sp.args.push_back({"y", y, t, Layout::nhwc});
  sp.args.push_back({"partial", partial, DType::f32, Layout::nhwc});
  sp.epilogue.activation = Activation::relu;
  return sp;
}

// linear.forward_split: x [3, 256] -> 40 features over 2 ranges.
StepSpec linear_split() {
  Attrs a;
  a.out_features = 40;
  StepSpec sp;
  sp.label = "split linear 3x256->40 f16 S2";
  sp.fn = Fn::linear_forward_split;
  sp.op = OpKind::linear;
  sp.attrs = a;
  sp.args = {{"x", {3, 256}, DType::f16}, {"w", {40, 256}, DType::f16},
             {"b", {40}, DType::f16},     {"tickets", {8}, DType::i32},
             {"y", {3, 40}, DType::f16},  {"partial", {6, 40}, DType::f32}};
  return sp;
}

std::vector<StepSpec> specs() {
  return {
      // 9 stages over 3 ranges, the whole staged epilogue.
      conv_split(1, 64, 8, 8, 64, 3, 1, 1, DType::f16, 3, true),
      // 2 stages (256-byte channels) over 2: flat and pixel tiles, BN 64 and 128.
      conv_split(2, 128, 6, 6, 72, 1, 1, 0, DType::bf16, 2, false),
      // tf32 with its rounding pass, stride 2, 9 stages over 4 (2, 2, 2, 3), O odd: the
      // epilogue from registers and the slices' single floats.
      conv_split(1, 32, 9, 9, 21, 3, 2, 1, DType::f32, 4, true),
      linear_split(),
  };
}

std::vector<Built> ours() {
  std::vector<Built> b = all_variants(specs(), {"h100"});
  std::erase_if(b, [](const Built& x) { return x.variant.family != kFamily; });
  return b;
}

} // namespace

TEST_CASE("Hopper split-K variants match the reference on the emulator, in any block order") {
  std::map<std::string, std::vector<Built>> per;
  for (Built& b : ours())
    per[b.spec.label].push_back(std::move(b));
  REQUIRE(per.size() == specs().size()); // every layer served
  // Each layer's first and last variant (pixel and im2col or flat tiles, both BNs offered).
  std::vector<Built> chosen;
  std::set<std::string> kinds;
  for (auto& [label, all] : per) {
    chosen.push_back(all.front());
    if (all.size() > 1) chosen.push_back(all.back());
  }
  for (const Built& b : chosen) {
    CHECK(b.variant.name.find("reduce") != std::string::npos);
    CHECK(b.variant.args.back() == "tickets");
    for (const char* k : {"_nhwc_t", "_im2col_", "_flat_"})
      if (b.variant.name.find(k) != std::string::npos) kinds.insert(k);
  }
  CHECK(kinds.size() == 3);
  const std::string dir = temp_dir("kiln-hopper-split");
  const BackendFactory emu = emu_library(chosen, dir);
  for (const Built& b : chosen) {
    // check_step also fails a kernel that leaves a tile counter other than zero.
    const KernelCheck r = emu_check(b, emu);
    INFO(r.node << ": " << r.kernel << " rel " << r.rel << " " << r.error);
    CHECK(r.pass);
  }
  // The tiles' units arrive in other orders on one worker and on three: the same bits.
  for (const Built& b : {chosen.front(), chosen.back()}) {
    CAPTURE(b.variant.name);
    const auto in = random_inputs(b, 5);
    const std::string lib = emu_library_path(dir);
    CHECK(bytes_of(emu_run(b, lib, in, "y", 1)) == bytes_of(emu_run(b, lib, in, "y", 3)));
  }
}

TEST_CASE("Hopper split-K variants compile with NVRTC for sm_90a: HGMMA, UTMALDG, no local "
          "memory") {
  std::map<std::string, Built> one; // a variant per layer and tile kind
  for (Built& b : ours()) {
    const std::string& n = b.variant.name;
    const std::string kind = n.find("_flat_") != std::string::npos     ? "flat"
                             : n.find("_im2col_") != std::string::npos ? "im2col"
                                                                       : "pixel";
    one.emplace(b.spec.label + kind, std::move(b));
  }
  CHECK(one.size() >= specs().size() + 2);
  for (const auto& [key, b] : one) {
    check_sm90a_compile(b.variant);
  }
}
