// A strided conv's data gradient as one stride-1 conv per phase, copied into dx with a step
// (rewrite/backward_data_phases.hpp): on the cpu backend in f64, the phases' steps compute
// the gather's dx for strides 2 and 3, unequal strides, odd sizes, kernels 1 to 7, paddings
// 0 to 3, writing dx or adding into it; a phase no tap reaches is zero-filled first (or left
// as it was when adding). Strided transposed convs (a UNet's upsampling) become phases in an
// inference plan, their turned filters in the prepare phase, and the plan computes the
// lowered model's output.
#include "generator/rewrite/backward_data_phases.hpp"

#include "tests/unit/plan/plan_fixtures.hpp"

#include "generator/emit/generate.hpp"
#include "generator/lower/lower.hpp"
#include "generator/model/model_json.hpp"
#include "runtime/cpu/backend.hpp"
#include "runtime/error.hpp"
#include "runtime/executor.hpp"
#include "runtime/weights.hpp"

#include <cmath>
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <functional>
#include <map>

using namespace kiln;

namespace {

struct Case {
  int64_t h, w, k, s0, s1, p0, p1;
};

// dy, w -> dx: conv2d.backward_data of a conv C = 3 -> O = 5 over h x w, batch 2, in f64.
Plan gather_plan(const Case& c, bool accumulate) {
  Step s;
  s.fn = Fn::conv2d_backward_data;
  s.op = OpKind::conv2d;
  s.node = "conv";
  s.attrs.out_channels = 5;
  s.attrs.kernel = {c.k, c.k};
  s.attrs.stride = {c.s0, c.s1};
  s.attrs.padding = {c.p0, c.p1};
  s.accumulate = accumulate;
  const int64_t oh = (c.h + 2 * c.p0 - c.k) / c.s0 + 1, ow = (c.w + 2 * c.p1 - c.k) / c.s1 + 1;
  return test::one_step_plan(s, {"dy", "w", "dx"},
                             {{2, 5, oh, ow}, {5, 3, c.k, c.k}, {2, 3, c.h, c.w}}, "phases");
}

// x [2, 5, h, w], w [5, 3, k, k], y, [b]: conv_transpose2d.forward (stride s, padding p,
// output_padding op), in f64; buffers x, w, y, b as gather_plan's dy, w, dx.
Plan transposed_plan(int64_t h, int64_t k, int64_t s, int64_t pad, int64_t op, bool bias) {
  Step st;
  st.fn = Fn::conv_transpose2d_forward;
  st.op = OpKind::conv_transpose2d;
  st.node = "up";
  st.attrs.out_channels = 3;
  st.attrs.kernel = {k, k};
  st.attrs.stride = {s, s};
  st.attrs.padding = {pad, pad};
  st.attrs.output_padding = {op, op};
  st.attrs.bias = bias;
  const int64_t y = (h - 1) * s - 2 * pad + k + op;
  std::vector<const char*> names = {"x", "w", "y"};
  std::vector<Shape> shapes = {{2, 5, h, h}, {5, 3, k, k}, {2, 3, y, y}};
  if (bias) names.push_back("b"), shapes.push_back({3});
  return test::one_step_plan(st, names, shapes, "phases");
}

// The plan with its step replaced by the phases' (each a reference step).
Plan phased_plan(const Plan& g, const PhasedBackwardData& d) {
  return test::with_steps(g, d.buffers, d.steps);
}

Tensor run(const Plan& p, uint64_t seed) {
  cpu::CpuBackend backend;
  Executor ex(p, backend);
  for (int b : {0, 1, 2, 3}) { // dy, w, dx (read where the step adds into it), [b]
    if (b == 3 && (p.inputs.size() < 3 || p.inputs[2] != 3)) continue;
    Tensor t(DType::f64, p.buffers[size_t(b)].shape);
    for (int64_t i = 0; i < t.numel(); ++i)
      t.set(i, std::sin(0.7 * double(i + 1) * double(b + 1) + double(seed)));
    ex.write(b, t);
  }
  ex.run("forward");
  return ex.read(2);
}

} // namespace

TEST_CASE("a strided data gradient's phases compute the gather's dx") {
  const Case cases[] = {{8, 8, 3, 2, 2, 1, 1},   {7, 9, 3, 2, 2, 1, 1},   {8, 7, 1, 2, 2, 0, 0},
                        {9, 9, 5, 2, 2, 2, 2},   {13, 11, 3, 3, 3, 0, 0}, {7, 8, 3, 2, 1, 1, 1},
                        {11, 11, 7, 2, 2, 3, 3}, {8, 8, 2, 2, 2, 0, 0},   {9, 10, 3, 2, 2, 0, 0},
                        {8, 8, 4, 2, 2, 1, 1},   {12, 12, 3, 3, 2, 1, 0}};
  for (const Case& c : cases)
    for (bool accumulate : {false, true}) {
      CAPTURE(fmt::format("{}x{} k{} s{}x{} p{}x{}{}", c.h, c.w, c.k, c.s0, c.s1, c.p0, c.p1,
                          accumulate ? " adding" : ""));
      const Plan g = gather_plan(c, accumulate);
      const std::optional<PhasedBackwardData> d = phased_backward_data(g, g.phases[0].steps[0]);
      REQUIRE(d);
      // One conv per phase some tap reaches; a fill exactly where some phase is left out and
      // the step writes dx.
      int convs = 0, fills = 0;
      for (const Step& s : d->steps) {
        convs += s.fn == Fn::conv2d_forward;
        fills += s.fn == Fn::fill_zero;
        if (s.fn == Fn::conv2d_forward) CHECK(s.attrs.stride == Int2{1, 1});
      }
      CHECK(convs == d->phases);
      CHECK(d->phases == std::min(c.k, c.s0) * std::min(c.k, c.s1));
      // Whether some tap reaches every element of dx (13 rows under a 3x3 stride 3 without
      // padding: row 12 is in no window), counted directly.
      const Shape& dys = g.buffers[0].shape;
      const auto reached = [&](int64_t y, int64_t out, int64_t s, int64_t p) {
        for (int64_t o = 0; o < out; ++o)
          for (int64_t t = 0; t < c.k; ++t)
            if (o * s - p + t == y) return true;
        return false;
      };
      bool all = true;
      for (int64_t y = 0; y < c.h; ++y)
        all &= reached(y, dys[2], c.s0, c.p0);
      for (int64_t x = 0; x < c.w; ++x)
        all &= reached(x, dys[3], c.s1, c.p1);
      CHECK(fills == (!all && !accumulate ? 1 : 0));
      const Tensor want = run(g, 1), got = run(phased_plan(g, *d), 1);
      CHECK(test::worst_difference(want, got) < 1e-12);
    }
}

TEST_CASE("a strided transposed conv's phases compute its output, bias and output_padding "
          "included") {
  struct T {
    int64_t h, k, s, p, op;
    bool bias;
  };
  // A UNet's 2x2 stride 2 with its bias; 3x3 stride 2 padding 1 with output_padding 1; 4x4
  // stride 2 padding 1; 3x3 stride 3; a 1x1 stride 2 without bias (odd rows: zeros).
  const T cases[] = {{5, 2, 2, 0, 0, true},
                     {5, 3, 2, 1, 1, true},
                     {6, 4, 2, 1, 0, true},
                     {4, 3, 3, 0, 0, true},
                     {5, 1, 2, 0, 1, false}};
  for (const T& c : cases) {
    CAPTURE(fmt::format("{}x{} k{} s{} p{} op{}{}", c.h, c.h, c.k, c.s, c.p, c.op,
                        c.bias ? " bias" : ""));
    const Plan g = transposed_plan(c.h, c.k, c.s, c.p, c.op, c.bias);
    const std::optional<PhasedBackwardData> d = phased_backward_data(g, g.phases[0].steps[0]);
    REQUIRE(d);
    const Tensor want = run(g, 2), got = run(phased_plan(g, *d), 2);
    CHECK(test::worst_difference(want, got) < 1e-12);
  }
  // A bias where no tap reaches would need a fill of its own: that one keeps its gather.
  const Plan g = transposed_plan(5, 1, 2, 0, 1, true);
  CHECK_FALSE(phased_backward_data(g, g.phases[0].steps[0]));
}

TEST_CASE("stride 1, groups and dilation keep their own paths") {
  Plan g = gather_plan({8, 8, 3, 1, 1, 1, 1}, false);
  CHECK_FALSE(phased_backward_data(g, g.phases[0].steps[0]));
  g = gather_plan({8, 8, 3, 2, 2, 1, 1}, false);
  Step s = g.phases[0].steps[0];
  s.attrs.dilation = {2, 2};
  CHECK_FALSE(phased_backward_data(g, s));
}

namespace {

// A net upsampling with transposed convs, f32 (tf32 convs), channels-last: 2x2 stride 2 (a UNet's,
// every phase one tap, with its bias: four 1x1 convs priced above the gather here), 3x3 stride 2
// padding 1 output_padding 1 (phased), and 1x1 stride 2 (phases no tap reaches: not phased,
// for its bias).
const char* const kUpsampler = R"({
  "format": "kiln-model/1", "name": "upsampler", "dtype": "f32",
  "input": {"name": "x", "shape": [8, 128, 16, 16]},
  "layers": [
    {"name": "up1", "op": "conv_transpose2d", "out_channels": 128, "kernel": 2, "stride": 2},
    {"name": "relu1", "op": "relu"},
    {"name": "up2", "op": "conv_transpose2d", "out_channels": 64, "kernel": 3, "stride": 2,
     "padding": 1, "output_padding": 1, "bias": false},
    {"name": "up3", "op": "conv_transpose2d", "out_channels": 64, "kernel": 1, "stride": 2}
  ],
  "outputs": ["up3"]
})";

} // namespace

TEST_CASE("strided transposed convs run as a conv per phase, their filters turned once") {
  const Model m = parse_model(kUpsampler, "upsampler.json");
  GenerateOptions go;
  go.layout = Layout::nhwc;
  const Generated gen = generate(m, load_gpu("h100"), go);
  std::map<std::string, int> phased;
  for (const BackwardDataConvDecision& d : gen.transposed_phases)
    phased[d.node] = d.phases;
  CHECK(phased == std::map<std::string, int>{{"up2", 4}});
  CHECK(gen.manifest["transposed_conv_phases"].size() == 1);
  // The turned filters are parameter work: in the prepare phase, none in the forward.
  int prepared = 0;
  for (const Step& s : gen.plan.phase("prepare")->steps)
    prepared += s.fn == Fn::conv2d_flip_weight;
  CHECK(prepared == 4);
  for (const Step& s : gen.plan.phase("forward")->steps)
    CHECK(s.fn != Fn::conv2d_flip_weight);
  // The generated plan on the cpu backend computes what the lowered model does.
  const Tensor want = test::forward_on_cpu(lower_model(m, LowerOptions{}));
  const Tensor got = test::forward_on_cpu(gen.plan);
  REQUIRE(want.numel() == got.numel());
  CHECK(test::relative_l2(want, got) < 1e-2);
}

TEST_CASE("plan.json keeps a phase's taps and a copy's step, and rejects ones that do not fit") {
  const Plan g = gather_plan({9, 9, 3, 2, 2, 1, 1}, false);
  const std::optional<PhasedBackwardData> d = phased_backward_data(g, g.phases[0].steps[0]);
  REQUIRE(d);
  const Plan p = phased_plan(g, *d);
  const nlohmann::ordered_json j = plan_to_json(p);
  const std::string text = j.dump(1);
  CHECK(text.find("\"taps\"") != std::string::npos);
  CHECK(text.find("\"step\"") != std::string::npos);
  const Plan q = parse_plan(text, "plan.json");
  CHECK(plan_to_json(q).dump(1) == text);
  // A step of every tap and a copy without a step leave the keys out (older plans read as
  // before).
  const Plan plain = gather_plan({9, 9, 3, 1, 1, 1, 1}, false);
  CHECK(plan_to_json(plain).dump().find("\"taps\"") == std::string::npos);
  const auto error_of = [&](const std::function<void(nlohmann::ordered_json&)>& edit) {
    nlohmann::ordered_json b = j;
    edit(b);
    try {
      parse_plan(b.dump(), "plan.json");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  const auto step_of = [](nlohmann::ordered_json& b, const char* fn) -> nlohmann::ordered_json& {
    for (auto& s : b["phases"]["forward"])
      if (s["fn"] == fn) return s;
    throw Error("", "", "no step");
  };
  CHECK(error_of([&](auto& b) {
          step_of(b, "conv2d.flip_weight")["taps"]["first"] = {3, 0};
        }).find("do not fit") != std::string::npos);
  CHECK(error_of([&](auto& b) {
          step_of(b, "conv2d.flip_weight")["taps"]["stride"] = {2, 2};
        }).find("unknown key \"stride\"") != std::string::npos);
  CHECK(error_of([&](auto& b) {
          step_of(b, "region.copy")["region"]["step"] = {0, 2};
        }).find("does not fit") != std::string::npos);
  CHECK(error_of([&](auto& b) {
          step_of(b, "region.copy")["region"]["step"] = {3, 3};
        }).find("does not fit") != std::string::npos);
}
