// The prepare phase: parameter-only work (batchnorm folded into a conv's weights) moved out
// of the forward pass, run once and again only after the parameters change, with its own
// validation rules.
#include "every_op_model.hpp"
#include "generator/emit/generate.hpp"
#include "generator/gpu/gpu_desc.hpp"
#include "generator/lower/lower.hpp"
#include "generator/lower/plan_builder.hpp"
#include "generator/model/fold.hpp"
#include "generator/rewrite/fuse.hpp"
#include "generator/rewrite/prepare_phase.hpp"
#include "generator/run/model_source.hpp"
#include "runtime/cpu/backend.hpp"
#include "runtime/error.hpp"
#include "runtime/executor.hpp"
#include "runtime/param_init.hpp"
#include "runtime/weights.hpp"

#include <cmath>
#include <doctest/doctest.h>

using namespace kiln;

namespace {

Tensor random_input(const Plan& p, uint64_t seed) {
  const Buffer& b = p.buffers[size_t(p.inputs[0])];
  Tensor x(b.dtype, b.shape);
  for (int64_t i = 0; i < x.numel(); ++i)
    x.set(i, double(splitmix64(seed) >> 11) * 0x1.0p-52 - 1.0);
  return x;
}

// every_op's inference plan with its epilogues fused (c1 + bn1 folds) and hoisted.
Plan prepared_plan() {
  Plan p = lower_model_steps(every_op_model(DType::f64), {});
  fuse_epilogues(p);
  CHECK(hoist_parameter_work(p) == 1);
  return finish_plan(std::move(p));
}

double max_rel(const Tensor& a, const Tensor& b) {
  double m = 0, s = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    m = std::max(m, std::abs(a.get(i) - b.get(i)));
    s = std::max(s, std::abs(b.get(i)));
  }
  return m / std::max(s, 1e-300);
}

} // namespace

TEST_CASE("batchnorm folding runs once, in the prepare phase, and again after new weights") {
  const Plan p = prepared_plan();
  const Plan ref = lower_model(every_op_model(DType::f64), {}); // unfused, nothing hoisted
  REQUIRE(p.phase("prepare"));
  for (const Step& s : p.phase("prepare")->steps)
    CHECK(s.fn == Fn::conv2d_fold_bn);
  for (const Step& s : p.phase("forward")->steps)
    CHECK(s.fn != Fn::conv2d_fold_bn);
  // The plan survives its own format.
  CHECK(parse_plan(plan_to_json(p).dump(), "p.json").phase("prepare")->steps.size() == 1);

  int prepared = 0;
  ExecutorOptions eo;
  eo.on_step = [&](const Phase& ph, size_t) { prepared += ph.name == "prepare"; };
  cpu::CpuBackend be, rbe;
  Executor ex(p, be, eo), rx(ref, rbe);
  const Tensor x = random_input(p, 5);
  for (uint64_t seed : {3, 4}) {
    bind_seeded_weights(ex, p, seed);
    bind_seeded_weights(rx, ref, seed);
    ex.write(p.inputs[0], x);
    rx.write(ref.inputs[0], x);
    for (int run = 0; run < 2; ++run) { // the second forward does not prepare again
      ex.run("forward");
      rx.run("forward");
      CHECK(max_rel(ex.read(p.outputs[0]), rx.read(ref.outputs[0])) < 1e-12);
    }
    CHECK(prepared == (seed == 3 ? 1 : 2));
  }
  // Derived buffers are the plan's to compute.
  for (size_t b = 0; b < p.buffers.size(); ++b)
    if (p.buffers[b].role == BufferRole::derived)
      CHECK_THROWS_WITH_AS(ex.write(int(b), ex.read(int(b))),
                           doctest::Contains("computed from the parameters"), Error);
}

TEST_CASE("the prepare phase reads parameters and writes derived buffers, and only it does") {
  const Plan good = prepared_plan();
  auto fails = [&](auto mutate, const char* what) {
    Plan p = good;
    mutate(p);
    CHECK_THROWS_WITH_AS(validate_plan(p), doctest::Contains(what), Error);
  };
  auto prep = [](Plan& p) -> Step& { return p.phases[0].steps[0]; };
  auto forward = [](Plan& p) -> std::vector<Step>& { return p.phases[1].steps; };
  fails([&](Plan& p) { prep(p).args[0].buffer = p.inputs[0]; }, "reads only parameters");
  fails([&](Plan& p) { forward(p).insert(forward(p).begin(), prep(p)); },
        "which only the prepare phase computes");
  fails([&](Plan& p) { p.phases[0].steps.clear(); }, "no step of the prepare phase computes it");
  fails(
      [&](Plan& p) {
        for (Arg& a : prep(p).args)
          if (a.role == "w_out") p.buffers[size_t(a.buffer)].role = BufferRole::activation;
      },
      "writes only derived buffers");
  fails(
      [&](Plan& p) {
        Step f;
        f.kind = StepKind::free;
        for (size_t i = 0; i < p.buffers.size() && f.buffer < 0; ++i)
          if (p.buffers[i].role == BufferRole::activation && p.buffers[i].view_of < 0)
            f.buffer = int(i);
        p.phases[0].steps.push_back(f);
      },
      "frees nothing");
  // Unknown phases are still refused by name.
  std::string text = plan_to_json(good).dump();
  text.replace(text.find("\"prepare\""), 9, "\"prepar\"");
  CHECK_THROWS_WITH_AS(parse_plan(text, "p.json"), doctest::Contains("(prepare, forward"), Error);
}

TEST_CASE("training plans and plans without parameter-only work keep one forward phase") {
  LowerOptions train;
  train.train = true;
  Plan t = lower_model_steps(every_op_model(DType::f64), train);
  fuse_epilogues(t);
  CHECK(hoist_parameter_work(t) == 0);
  Plan plain = lower_model_steps(every_op_model(DType::f64), {}); // nothing fused: no fold
  CHECK(hoist_parameter_work(plain) == 0);
  CHECK_FALSE(plain.phase("prepare"));
}

TEST_CASE("generated inference plans fold batchnorm and convert weights outside the forward") {
  struct Case {
    const char* model;
    const char* gpu;
    DType dtype;
    int64_t fold; // FoldedCNNs factor (0: none)
  };
  for (const Case& c :
       {Case{"resnet50", "h100", DType::f16, 0}, Case{"noscope_coral", "h100", DType::f16, 4},
        Case{"resnet18", "t4", DType::f32, 0}}) {
    const std::string name = c.model;
    CAPTURE(name);
    Model m = load_model_or_shipped(c.model);
    if (c.fold) m = fold_model(m, {.factor = c.fold});
    ModelOverrides o;
    o.dtype = c.dtype;
    o.batch = 8;
    apply_overrides(m, o);
    const Plan p = generate(m, load_gpu(c.gpu), {}).plan;
    REQUIRE(p.phase("prepare"));
    CHECK(p.phase("prepare")->steps.size() > 0);
    for (const Step& s : p.phase("forward")->steps) {
      CHECK(s.fn != Fn::conv2d_fold_bn);
      for (const Arg& a : s.args) // weights are converted by prepare, activations here
        if (s.fn == Fn::convert && a.role == "src") {
          const BufferRole r = p.buffers[size_t(p.base(a.buffer))].role;
          CHECK((r != BufferRole::param && r != BufferRole::state && r != BufferRole::derived));
        }
    }
  }
}
