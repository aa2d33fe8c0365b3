// The Hopper weight-gradient family (conv2d_backward_weight_hopper_wgmma): every variant it
// offers for a few NHWC gradients on the h100 (pixel and flat tiles, strides, dw and fp32
// slices, one and two consumers, BN 64 to 256, f16 and bf16) runs on the emulator with every
// check on against the f64 reference, and compiles with NVRTC for sm_90a without local
// memory or serialised wgmmas, its SASS showing HGMMA and TMA loads and no HMMA.
#include "tests/kernels/harness.hpp"

#include "tests/kernels/hopper/sm90a_compile.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <set>

using namespace kiln;
using namespace kiln::test;

namespace {

constexpr const char* kFamily = "conv2d_backward_weight_hopper_wgmma";

// dw of a conv of x [n, c, h, w] -> o channels, x, dy NHWC; `slices` > 1: fp32 slices.
StepSpec wgrad(int64_t n, int64_t c, int64_t h, int64_t w, int64_t o, Int2 k, Int2 s, Int2 p,
               DType t, int64_t slices) {
  Attrs a;
  a.out_channels = o, a.kernel = k, a.stride = s, a.padding = p;
  const int64_t oh = (h + 2 * p[0] - k[0]) / s[0] + 1, ow = (w + 2 * p[1] - k[1]) / s[1] + 1;
  StepSpec sp;
  sp.label = fmt::format("wgrad {}x{}x{}x{}->{} k{}x{} s{}x{} p{}x{} {} x{}", n, c, h, w, o, k[0],
                         k[1], s[0], s[1], p[0], p[1], dtype_name(t), slices);
  sp.fn = Fn::conv2d_backward_weight;
  sp.op = OpKind::conv2d;
  sp.attrs = a;
  Shape dw = {o, c, k[0], k[1]};
  if (slices > 1) dw.insert(dw.begin(), slices);
  sp.args = {{"x", {n, c, h, w}, t, Layout::nhwc},
             {"dy", {n, o, oh, ow}, t, Layout::nhwc},
             {slices > 1 ? "partial" : "dw", dw, slices > 1 ? DType::f32 : t}};
  return sp;
}

std::vector<StepSpec> emu_specs() {
  return {
      wgrad(2, 64, 10, 10, 128, {3, 3}, {1, 1}, {1, 1}, DType::f16, 1),
      wgrad(2, 128, 9, 9, 64, {3, 3}, {2, 2}, {1, 1}, DType::bf16, 3),
      wgrad(2, 64, 9, 9, 64, {1, 1}, {1, 1}, {0, 0}, DType::f16, 2),
      wgrad(2, 64, 12, 12, 128, {1, 1}, {2, 2}, {0, 0}, DType::bf16, 1),
  };
}

// Every branch of the template, BN 256 included, on shapes too large to emulate in time.
std::vector<StepSpec> nvrtc_specs() {
  std::vector<StepSpec> s = emu_specs();
  s.push_back(wgrad(32, 256, 14, 14, 256, {3, 3}, {1, 1}, {1, 1}, DType::f16, 8));
  s.push_back(wgrad(32, 256, 56, 56, 64, {1, 1}, {1, 1}, {0, 0}, DType::bf16, 1));
  return s;
}

std::vector<Built> ours(const std::vector<StepSpec>& specs) {
  std::vector<Built> b = all_variants(specs, {"h100"});
  std::erase_if(b, [](const Built& x) { return x.variant.family != kFamily; });
  return b;
}

} // namespace

TEST_CASE("Hopper weight-gradient variants match the reference on the emulator") {
  const auto built = ours(emu_specs());
  std::set<std::string> specs, variants;
  for (const Built& b : built)
    specs.insert(b.spec.label), variants.insert(b.variant.name);
  CHECK(specs.size() == emu_specs().size()); // every spec served
  MESSAGE(built.size() << " variants");
  for (const KernelCheck& r : emu_checks(built, temp_dir("kiln-hopper-wgrad"))) {
    INFO(r.node << ": " << r.kernel << " rel " << r.rel << " " << r.error);
    CHECK(r.pass);
  }
}

TEST_CASE("Hopper weight-gradient variants compile with NVRTC for sm_90a: HGMMA, UTMALDG, no "
          "local memory") {
  // The large shapes' 8x8 and flat tiles only: the other pixel tiles are the same code, which
  // the small shapes compile.
  std::vector<Built> built = ours(nvrtc_specs());
  std::erase_if(built, [](const Built& b) {
    return b.spec.args[0].shape[0] == 32 && b.variant.name.find("_t8x8_") == std::string::npos &&
           b.variant.name.find("_flat_") == std::string::npos;
  });
  std::set<std::string> seen, bns;
  for (const Built& b : built) {
    if (!seen.insert(b.variant.name).second) continue;
    const Variant& v = b.variant;
    bns.insert(v.name.substr(v.name.find("_bn") + 3, 3));
    check_sm90a_compile(v);
  }
  CHECK(bns == std::set<std::string>{"64_", "128", "256"});
}
