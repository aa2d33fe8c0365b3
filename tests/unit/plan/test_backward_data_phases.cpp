// A strided conv's data gradient as one stride-1 conv per phase, copied into dx with a step
// (rewrite/backward_data_phases.hpp): on the cpu backend in f64, the phases' steps compute
// the gather's dx for strides 2 and 3, unequal strides, odd sizes, kernels 1 to 7, paddings
// 0 to 3, writing dx or adding into it; a phase no tap reaches is zero-filled first (or left
// as it was when adding); and resnet50's six strided data gradients all become phases.
#include "generator/rewrite/backward_data_phases.hpp"

#include "runtime/cpu/backend.hpp"
#include "runtime/executor.hpp"

#include <cmath>
#include <doctest/doctest.h>
#include <fmt/format.h>

using namespace kiln;

namespace {

struct Case {
  int64_t h, w, k, s0, s1, p0, p1;
};

// dy, w -> dx: conv2d.backward_data of a conv C = 3 -> O = 5 over h x w, batch 2, in f64.
Plan gather_plan(const Case& c, bool accumulate) {
  Attrs a;
  a.out_channels = 5;
  a.kernel = {c.k, c.k};
  a.stride = {c.s0, c.s1};
  a.padding = {c.p0, c.p1};
  const int64_t oh = (c.h + 2 * c.p0 - c.k) / c.s0 + 1, ow = (c.w + 2 * c.p1 - c.k) / c.s1 + 1;
  Plan p;
  p.model = "phases";
  p.dtype = DType::f64;
  const Shape shapes[] = {{2, 5, oh, ow}, {5, 3, c.k, c.k}, {2, 3, c.h, c.w}};
  const char* names[] = {"dy", "w", "dx"};
  Step s;
  s.kind = StepKind::reference;
  s.fn = Fn::conv2d_backward_data;
  s.op = OpKind::conv2d;
  s.node = "conv";
  s.attrs = a;
  s.accumulate = accumulate;
  s.params = default_params(s.fn);
  for (int i = 0; i < 3; ++i) {
    Buffer b;
    b.name = names[i];
    b.shape = shapes[i];
    b.dtype = DType::f64;
    b.offset = p.arena_bytes;
    b.role = i == 2 ? BufferRole::output : BufferRole::input;
    p.arena_bytes += (b.bytes() + 255) / 256 * 256;
    p.buffers.push_back(b);
    (i == 2 ? p.outputs : p.inputs).push_back(i);
    s.args.push_back({names[i], i});
  }
  p.phases.push_back(Phase{"forward", {s}});
  validate_plan(p);
  return p;
}

// The plan with its step replaced by the phases' (each a reference step, its buffers laid
// out after the others).
Plan phased_plan(const Plan& g, const PhasedBackwardData& d) {
  Plan p = g;
  for (Buffer b : d.buffers) {
    b.offset = p.arena_bytes;
    p.arena_bytes += (b.bytes() + 255) / 256 * 256;
    p.buffers.push_back(b);
  }
  p.phases[0].steps = d.steps;
  for (Step& s : p.phases[0].steps)
    s.kind = StepKind::reference;
  validate_plan(p);
  return p;
}

Tensor run(const Plan& p, uint64_t seed) {
  cpu::CpuBackend backend;
  Executor ex(p, backend);
  for (int b : {0, 1, 2}) { // dy, w, and dx (read where the step adds into it)
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
      double worst = 0;
      for (int64_t i = 0; i < want.numel(); ++i)
        worst = std::max(worst, std::abs(want.get(i) - got.get(i)));
      CHECK(worst < 1e-12);
    }
}

TEST_CASE("stride 1, groups and dilation keep their own paths") {
  Plan g = gather_plan({8, 8, 3, 1, 1, 1, 1}, false);
  CHECK_FALSE(phased_backward_data(g, g.phases[0].steps[0]));
  g = gather_plan({8, 8, 3, 2, 2, 1, 1}, false);
  Step s = g.phases[0].steps[0];
  s.attrs.dilation = {2, 2};
  CHECK_FALSE(phased_backward_data(g, s));
}
