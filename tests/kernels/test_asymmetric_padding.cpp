// Tiles of a tiled segment pad only at the true image border: convolutions and pooling
// with different padding before and after the input (padding_end), through every family
// that serves them, against the reference on the emulator and compiled with NVRTC.
#include "runtime/op.hpp"
#include "tests/kernels/harness.hpp"

#include <doctest/doctest.h>

using namespace kiln;
using namespace kiln::test;

namespace {

Attrs conv(int64_t o, Int2 k, Int2 s, Int2 p, Int2 pe) {
  Attrs a;
  a.out_channels = o, a.kernel = k, a.stride = s, a.padding = p, a.padding_end = pe;
  return a;
}

Shape conv_out(const Shape& x, const Attrs& a) {
  return infer_shape(OpKind::conv2d, a, std::span<const Shape>(&x, 1));
}

std::vector<StepSpec> specs() {
  std::vector<StepSpec> r;
  // (padding before, after): interior tiles (0/0), top-left tiles (p/0), bottom-right (0/p).
  const std::pair<Int2, Int2> pads[] = {{{1, 0}, {0, 1}}, {{0, 1}, {1, 0}}, {{1, 1}, {0, 0}}, {{0, 0}, {1, 1}}};
  int i = 0;
  for (auto [p, pe] : pads) {
    const Attrs a = conv(8, {3, 3}, {1 + i % 2, 1}, p, pe);
    const Shape x{1, 4, 9, 11}, y = conv_out(x, a), w{8, 4, 3, 3};
    const std::string tag = "pad " + std::to_string(p[0]) + std::to_string(p[1]) + "/" + std::to_string(pe[0]) +
                            std::to_string(pe[1]);
    StepSpec f{"conv fwd nchw " + tag, Fn::conv2d_forward, OpKind::conv2d, a, {{"x", x}, {"w", w}, {"b", {8}}, {"y", y}}};
    f.epilogue.activation = Activation::relu;
    r.push_back(f);
    r.push_back({"conv fwd nhwc f16 " + tag, Fn::conv2d_forward, OpKind::conv2d, a,
                 {{"x", x, DType::f16, Layout::nhwc}, {"w", w, DType::f16, Layout::nhwc}, {"y", y, DType::f16, Layout::nhwc}}});
    r.push_back({"conv bwd data " + tag, Fn::conv2d_backward_data, OpKind::conv2d, a, {{"dy", y}, {"w", w}, {"dx", x}}});
    r.push_back({"conv bwd weight " + tag, Fn::conv2d_backward_weight, OpKind::conv2d, a, {{"x", x}, {"dy", y}, {"dw", w}}});
    Attrs pool;
    pool.kernel = {3, 3}, pool.stride = {2, 2}, pool.padding = p, pool.padding_end = pe;
    const Shape px{1, 3, 9, 10}, py = infer_shape(OpKind::maxpool2d, pool, std::span<const Shape>(&px, 1));
    r.push_back({"maxpool fwd " + tag, Fn::maxpool2d_forward, OpKind::maxpool2d, pool, {{"x", px}, {"y", py}}});
    r.push_back({"maxpool bwd " + tag, Fn::maxpool2d_backward, OpKind::maxpool2d, pool, {{"x", px}, {"dy", py}, {"dx", px}}});
    pool.count_include_pad = i % 2 == 0;
    r.push_back({"avgpool fwd " + tag, Fn::avgpool2d_forward, OpKind::avgpool2d, pool, {{"x", px}, {"y", py}}});
    r.push_back({"avgpool bwd " + tag, Fn::avgpool2d_backward, OpKind::avgpool2d, pool, {{"dy", py}, {"dx", px}}});
    ++i;
  }
  return r;
}

} // namespace

TEST_CASE("asymmetric padding: every variant compiles with NVRTC for sm_80 and sm_90") {
  std::vector<std::string> unserved;
  const auto built = all_variants(specs(), {"a100", "h200"}, &unserved);
  for (const std::string& u : unserved) FAIL_CHECK("no family serves " << u);
  for (const std::string& f : nvrtc_failures(built)) FAIL_CHECK(f);
}

TEST_CASE("asymmetric padding: every variant matches the reference on the emulator") {
  std::vector<std::string> unserved;
  const auto built = all_variants(specs(), {"h200"}, &unserved);
  for (const std::string& u : unserved) FAIL_CHECK("no family serves " << u);
  for (const KernelCheck& r : emu_checks(built, temp_dir("kiln-asym"))) {
    INFO(r.node << ": " << r.kernel << " rel " << r.rel << " " << r.error);
    CHECK(r.pass);
  }
}
