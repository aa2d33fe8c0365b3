// A strided conv over few channels as a stride-1 conv over space_to_depth of its input
// (rewrite/space_to_depth_conv.hpp): on the cpu backend in f64 the three steps compute the
// conv's y for stems (7x7 stride 2 padding 3 over 3 channels, odd and even sizes), 3x3 stride
// 2 (the mobile nets'), a 4x4 stride 4 patchify (one tap: a 1x1 conv), 5x5 and 6x6 stride 2,
// 3x3 stride 3, with and without a bias; other convs keep their path. A generated stem for
// the h100 takes it, its filters rearranged once (prepare), a tensor-core conv over 16
// channels serving it, and the plan computes the lowered model's output; resnet50's at batch
// 256 runs on the Hopper family.
#include "generator/rewrite/space_to_depth_conv.hpp"

#include "tests/unit/plan/plan_fixtures.hpp"

#include "generator/emit/generate.hpp"
#include "generator/gpu/gpu_desc.hpp"
#include "generator/lower/lower.hpp"
#include "generator/model/model_json.hpp"
#include "generator/model/overrides.hpp"
#include "generator/run/model_source.hpp"
#include "runtime/cpu/backend.hpp"
#include "runtime/executor.hpp"
#include "runtime/weights.hpp"

#include <cmath>
#include <doctest/doctest.h>
#include <fmt/format.h>

using namespace kiln;

namespace {

struct Case {
  int64_t h, w, c, k, s, p;
  bool bias;
};

// x [2, c, h, w], w [5, c, k, k], y, [b]: conv2d.forward in f64, every buffer an input but y.
Plan conv_plan(const Case& c) {
  Step s;
  s.fn = Fn::conv2d_forward;
  s.op = OpKind::conv2d;
  s.node = "stem";
  s.attrs.out_channels = 5;
  s.attrs.kernel = {c.k, c.k};
  s.attrs.stride = {c.s, c.s};
  s.attrs.padding = {c.p, c.p};
  s.attrs.bias = c.bias;
  const int64_t oh = (c.h + 2 * c.p - c.k) / c.s + 1, ow = (c.w + 2 * c.p - c.k) / c.s + 1;
  std::vector<const char*> names = {"x", "w", "y"};
  std::vector<Shape> shapes = {{2, c.c, c.h, c.w}, {5, c.c, c.k, c.k}, {2, 5, oh, ow}};
  if (c.bias) names.push_back("b"), shapes.push_back({5});
  return test::one_step_plan(s, names, shapes, "s2d");
}

Tensor run(const Plan& p) {
  cpu::CpuBackend backend;
  Executor ex(p, backend);
  for (int b : p.inputs) {
    Tensor t(DType::f64, p.buffers[size_t(b)].shape);
    for (int64_t i = 0; i < t.numel(); ++i)
      t.set(i, std::sin(0.7 * double(i + 1) * double(b + 1)));
    ex.write(b, t);
  }
  ex.run("forward");
  return ex.read(2);
}

} // namespace

TEST_CASE("a strided conv over few channels as a stride-1 conv over space_to_depth(x)") {
  const Case cases[] = {{32, 32, 3, 7, 2, 3, false}, {31, 29, 3, 7, 2, 3, true},
                        {17, 16, 3, 3, 2, 1, true},  {16, 16, 3, 4, 4, 0, true},
                        {20, 21, 1, 5, 2, 2, false}, {14, 14, 3, 6, 2, 2, false},
                        {15, 13, 2, 3, 3, 0, true},  {16, 16, 4, 2, 2, 0, false}};
  for (const Case& c : cases) {
    CAPTURE(fmt::format("{}x{} c{} k{} s{} p{}{}", c.h, c.w, c.c, c.k, c.s, c.p,
                        c.bias ? " bias" : ""));
    const Plan g = conv_plan(c);
    const std::optional<SpaceToDepthConv> r = space_to_depth_conv(g, g.phases[0].steps[0]);
    REQUIRE(r);
    CHECK(r->kernel == (c.k + c.s - 1) / c.s);
    CHECK(r->channels % 16 == 0);
    CHECK(r->channels >= c.s * c.s * c.c);
    REQUIRE(r->steps.size() == 3);
    CHECK(r->steps[2].attrs.stride == Int2{1, 1});
    const Tensor want = run(g), got = run(test::with_steps(g, r->buffers, r->steps));
    REQUIRE(want.numel() == got.numel());
    CHECK(test::worst_difference(want, got) < 1e-12);
  }
}

TEST_CASE("stride 1, many channels, groups and dilation keep their own paths") {
  const Plan g = conv_plan({16, 16, 3, 3, 1, 1, false});
  CHECK_FALSE(space_to_depth_conv(g, g.phases[0].steps[0]));
  const Plan wide = conv_plan({16, 16, 32, 3, 2, 1, false}); // 128 block channels
  CHECK_FALSE(space_to_depth_conv(wide, wide.phases[0].steps[0]));
  const Plan stem = conv_plan({32, 32, 3, 7, 2, 3, false});
  Step s = stem.phases[0].steps[0];
  s.attrs.dilation = {2, 2};
  CHECK_FALSE(space_to_depth_conv(stem, s));
  s = stem.phases[0].steps[0];
  s.attrs.padding_end = {2, 2}; // a tile's border
  CHECK_FALSE(space_to_depth_conv(stem, s));
  const Plan narrow = conv_plan({16, 16, 3, 1, 2, 0, false}); // a kernel under the stride
  CHECK_FALSE(space_to_depth_conv(narrow, narrow.phases[0].steps[0]));
}

// A stem as resnet's (conv 7x7 stride 2 over 3 channels, batchnorm, ReLU, max pool), f16.
const char* const kStem = R"({
  "format": "kiln-model/1", "name": "stem", "dtype": "f16",
  "input": {"name": "x", "shape": [16, 3, 160, 160]},
  "layers": [
    {"name": "conv1", "op": "conv2d", "out_channels": 64, "kernel": 7, "stride": 2,
     "padding": 3, "bias": false},
    {"name": "bn1", "op": "batchnorm"},
    {"name": "relu", "op": "relu"},
    {"name": "pool", "op": "maxpool2d", "kernel": 3, "stride": 2, "padding": 1}
  ],
  "outputs": ["pool"]
})";

TEST_CASE("a stem on the h100: space_to_depth of the image, a tensor-core conv over 16 channels") {
  const Model m = parse_model(kStem, "stem.json");
  const Generated gen = generate(m, load_gpu("h100"), GenerateOptions{});
  REQUIRE(gen.space_to_depth.size() == 1);
  const SpaceToDepthDecision& d = gen.space_to_depth[0];
  CHECK(d.node == "conv1+bn1+relu");
  CHECK(d.kernel == 4);
  CHECK(d.channels == 16);
  CHECK(d.after_us < d.conv_us);
  CHECK(gen.manifest["space_to_depth_convs"].size() == 1);
  // The filters' rearrangement is parameter work (prepare); the image's is in the forward,
  // written channels-last for the conv that reads it.
  int prepared = 0, forward = 0;
  for (const Step& s : gen.plan.phase("prepare")->steps)
    prepared += s.fn == Fn::space_to_depth_forward;
  std::string conv_kernel;
  for (const Step& s : gen.plan.phase("forward")->steps) {
    if (s.fn == Fn::space_to_depth_forward) {
      ++forward;
      CHECK(gen.plan.buffers[size_t(s.need("y"))].layout == Layout::nhwc);
    }
    if (s.fn == Fn::conv2d_forward || s.fn == Fn::conv2d_pool_forward)
      conv_kernel = gen.plan.kernels[size_t(s.kernel)].name;
  }
  CHECK(prepared == 1);
  CHECK(forward == 1);
  CHECK(conv_kernel.find("c16h81w83_o64k4x4s1x1p1x0") != std::string::npos);
  // The generated plan on the cpu backend computes what the lowered model does.
  const Tensor want = test::forward_on_cpu(lower_model(m, LowerOptions{}));
  const Tensor got = test::forward_on_cpu(gen.plan);
  REQUIRE(want.numel() == got.numel());
  CHECK(test::relative_l2(want, got) < 1e-2);
}

TEST_CASE("resnet50's stem at batch 256 on the h100: a Hopper conv over space_to_depth(x)") {
  Model m = load_model_or_shipped("resnet50");
  ModelOverrides o;
  o.dtype = DType::f16;
  o.batch = 256;
  apply_overrides(m, o);
  const Generated gen = generate(m, load_gpu("h100"), GenerateOptions{});
  REQUIRE(gen.space_to_depth.size() == 1);
  std::string stem;
  for (const Step& s : gen.plan.phase("forward")->steps)
    if (s.node == gen.space_to_depth[0].node && s.fn == Fn::conv2d_forward)
      stem = gen.plan.kernels[size_t(s.kernel)].name;
  CHECK(stem.find("hopper_wgmma") != std::string::npos);
  CHECK(stem.find("c16h113w115_o64k4x4s1x1p1x0") != std::string::npos);
  // Not in a training plan, whose weight gradient the rewrite does not give back.
  GenerateOptions train;
  train.train = true;
  o.batch = 8;
  o.image = Int2{64, 64};
  apply_overrides(m, o);
  CHECK(generate(m, load_gpu("h100"), train).space_to_depth.empty());
}
