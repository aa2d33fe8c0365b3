// A check of a large batch compares a few images with the reference
// (generator/check/image_sample.hpp): which ones, and that the check still fails a kernel
// that leaves any image unwritten, or computes a compared image wrong. A gated 3x3 conv with
// a residual (every per-image role) over 7 images, on the emulator.
#include "tests/kernels/harness.hpp"

#include "generator/check/image_sample.hpp"

#include <cmath>
#include <doctest/doctest.h>
#include <limits>

using namespace kiln;
using namespace kiln::test;

namespace {

constexpr int64_t kBatch = 7;

StepSpec conv_spec() {
  Attrs a;
  a.out_channels = 16;
  a.kernel = {3, 3};
  a.padding = {1, 1};
  a.bias = true;
  StepSpec s{"c16 3x3 p1 gated residual", Fn::conv2d_forward, OpKind::conv2d, a, {}};
  const Shape y{kBatch, 16, 5, 5};
  s.args = {{"x", {kBatch, 16, 5, 5}, DType::f16, Layout::nhwc},
            {"w", {16, 16, 3, 3}, DType::f16, Layout::nhwc},
            {"b", {16}, DType::f16},
            {"residual", y, DType::f16, Layout::nhwc},
            {"gate", {kBatch, 16, 1, 1}, DType::f16, Layout::nhwc},
            {"y", y, DType::f16, Layout::nhwc}};
  s.epilogue.activation = Activation::relu;
  return s;
}

// The device as given, but every launch leaves image `image` of y holding `value` (NaN: an
// image not written).
class Planted : public Backend {
public:
  Planted(std::unique_ptr<Backend> inner, int64_t image, double value)
      : inner_(std::move(inner)), image_(image), value_(value) {}
  std::string_view name() const override { return inner_->name(); }
  void prepare(const Plan& plan) override { inner_->prepare(plan); }
  void upload(int b, const Tensor& t) override { inner_->upload(b, t); }
  Tensor download(int b) override { return inner_->download(b); }
  void poison(int b) override { inner_->poison(b); }
  void run(const Step& step) override {
    inner_->run(step);
    if (step.kind != StepKind::launch) return;
    Tensor y = inner_->download(step.need("y"));
    const int64_t per = y.numel() / y.shape()[0];
    for (int64_t e = image_ * per; e < (image_ + 1) * per; ++e)
      y.set(e, value_);
    inner_->upload(step.need("y"), y);
  }

private:
  std::unique_ptr<Backend> inner_;
  int64_t image_;
  double value_;
};

} // namespace

TEST_CASE("sampled images for the emulator's checks: the first two, the last and seeded others, of "
          "separable steps only") {
  const Plan p = spec_plan(conv_spec());
  const Step& s = p.phases[0].steps[0];
  CHECK(sampled_images(p, s, 3, 1).picked == std::vector<int64_t>{0, 1, 6});
  CHECK(sampled_images(p, s, 3, 1).batch == kBatch);
  const std::vector<int64_t> four = sampled_images(p, s, 4, 1).picked;
  REQUIRE(four.size() == 4);
  CHECK(four[1] == 1);
  CHECK(four[2] >= 2);
  CHECK(four[2] <= 5);
  CHECK(four.back() == 6);
  CHECK(sampled_images(p, s, 2, 1).picked == std::vector<int64_t>{0, 1});
  CHECK(sampled_images(p, s, kBatch, 1).picked.empty()); // a batch no larger: all
  CHECK(sampled_images(p, s, 0, 1).picked.empty());      // 0: all
  // A function that is not image-separable (relu.forward declares nothing) is checked whole.
  StepSpec relu{"relu", Fn::relu_forward, OpKind::relu, Attrs{}, {}};
  relu.args = {{"x", {kBatch, 4, 2, 2}}, {"y", {kBatch, 4, 2, 2}}};
  const Plan rp = spec_plan(relu);
  CHECK(sampled_images(rp, rp.phases[0].steps[0], 3, 1).picked.empty());
  // The reference plan holds the picked images of x, residual, gate and y; w and b whole.
  const Plan ref = single_step_plan(p, s, nullptr, true, 3);
  const Step& rs = ref.phases[0].steps[0];
  for (const char* role : {"x", "residual", "gate", "y"})
    CHECK(ref.buffers[size_t(rs.need(role))].shape[0] == 3);
  CHECK(ref.buffers[size_t(rs.need("w"))].shape[0] == 16);
}

TEST_CASE("sampled checks on the emulator: pass a right kernel, fail an unwritten or wrong image") {
  const std::vector<Built> built = all_variants({conv_spec()}, {"h200"});
  REQUIRE(!built.empty());
  const Built& b = built[0];
  const BackendFactory emu = emu_library({b}, temp_dir("kiln-igemm-images"));
  const Plan p = spec_plan(b.spec);
  const Step& s = p.phases[0].steps[0];
  const Kernel k = kernel_of(b.variant);
  const std::string math(math_name(b.variant.math));
  const auto check = [&](const BackendFactory& device, int64_t images) {
    KernelCheck r = check_step(p, s, k, math, device, 1, CheckOptions{.images = images});
    INFO(b.variant.name << " images " << images << ": rel " << r.rel << " " << r.error);
    return r;
  };
  const KernelCheck sampled = check(emu, 3), whole = check(emu, 0);
  CHECK(sampled.pass);
  CHECK(sampled.images == 3);
  CHECK(sampled.batch == kBatch);
  CHECK(whole.pass);
  CHECK(whole.images == 0);
  const auto planted = [&](int64_t image, double value) -> BackendFactory {
    return [=] { return std::make_unique<Planted>(emu(), image, value); };
  };
  // Image 3 is not among {0, 1, 6}: left unwritten, the NaN scan of every image fails it.
  const KernelCheck unwritten = check(planted(3, std::numeric_limits<double>::quiet_NaN()), 3);
  CHECK_FALSE(unwritten.pass);
  CHECK(unwritten.error.find("NaN") != std::string::npos);
  // A wrong value in a compared image (the last) fails; in an image not compared, only the
  // whole check sees it (what sampling gives up, and why 0 checks every image).
  CHECK_FALSE(check(planted(6, 50.0), 3).pass);
  CHECK(check(planted(3, 50.0), 3).pass);
  CHECK_FALSE(check(planted(3, 50.0), 0).pass);
}
