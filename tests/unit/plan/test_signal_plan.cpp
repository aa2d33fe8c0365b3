// A 1-D signal model ([N, C, L], held as [N, C, L, 1]) through the lowering: its training
// step's gradients against finite differences of the loss, and the plan's optional "signal"
// field (written, read back, validated; what kiln build's program reads to take [N, C, L]).
#include "expect_rejected.hpp"
#include "finite_difference.hpp"
#include "generator/lower/lower.hpp"
#include "generator/model/model_json.hpp"
#include "generator/model/overrides.hpp"
#include "runtime/cpu/backend.hpp"
#include "runtime/error.hpp"
#include "runtime/executor.hpp"
#include "runtime/param_init.hpp"
#include "runtime/weights.hpp"

#include <cmath>
#include <doctest/doctest.h>

using namespace kiln;

namespace {

// Conv1d with padding, stride and dilation, a grouped Conv1d, the pools over L, a classifier.
Model signal_model(DType dtype) {
  Model m = parse_model(R"({"format": "kiln-model/1", "name": "signal",
  "input": {"name": "x", "shape": [3, 4, 20]},
  "layers": [
    {"name": "c1", "op": "conv2d", "out_channels": 6, "kernel": [5, 1], "padding": [2, 0]},
    {"name": "r1", "op": "relu"},
    {"name": "mp", "op": "maxpool2d", "kernel": [2, 1]},
    {"name": "c2", "op": "conv2d", "out_channels": 6, "kernel": [3, 1], "stride": [2, 1],
     "dilation": [2, 1], "padding": [2, 0], "groups": 2},
    {"name": "gap", "op": "global_avgpool"},
    {"name": "f", "op": "flatten"},
    {"name": "fc", "op": "linear", "out_features": 5}]})",
                        "signal.json");
  ModelOverrides o;
  o.dtype = dtype;
  apply_overrides(m, o);
  return m;
}

Plan train_plan(DType dtype) {
  LowerOptions o;
  o.train = true;
  return lower_model(signal_model(dtype), o);
}

} // namespace

TEST_CASE("a signal model's training gradients match finite differences of the loss") {
  const Model m = signal_model(DType::f64);
  REQUIRE(m.signal);
  REQUIRE(m.input_shape == Shape{3, 4, 20, 1});
  const Plan plan = train_plan(DType::f64);
  cpu::CpuBackend backend;
  Executor ex(plan, backend);
  bind_seeded_weights(ex, plan, 7);
  Tensor x(DType::f64, plan.buffers[plan.inputs[0]].shape);
  uint64_t state = 11;
  for (int64_t i = 0; i < x.numel(); ++i)
    x.set(i, double(splitmix64(state) >> 11) * 0x1.0p-52 - 0.5);
  ex.write(plan.inputs[0], x);
  Tensor t(DType::i64, plan.buffers[plan.target].shape);
  for (int64_t i = 0; i < t.numel(); ++i)
    t.set(i, double((i * 3 + 1) % 5));
  ex.write(plan.target, t);
  const auto loss = [&] {
    ex.run("forward");
    const double l = ex.read(plan.loss).get(0);
    ex.run("backward"); // frees what the forward kept
    return l;
  };
  loss();
  const auto grads = collect_grads(ex, plan);
  int checked = 0;
  for (const ParamBinding& p : plan.params) {
    REQUIRE(p.grad >= 0);
    const Tensor& g = grads.at(p.name);
    double largest = 0;
    for (int64_t i = 0; i < g.numel(); ++i)
      largest = std::max(largest, std::abs(g.get(i)));
    CHECK(largest > 1e-6); // every parameter is trained: a zero gradient would pass vacuously
    checked += check_finite_differences(ex, p, g, loss, 9);
  }
  CHECK(checked >= 40); // 46: every parameter, about nine elements of each
}

TEST_CASE("a signal plan says so, survives its JSON form, and is validated") {
  const Plan p = train_plan(DType::f32);
  CHECK(p.signal);
  CHECK(lower_model(signal_model(DType::f32), {}).signal);
  const std::string text = plan_to_json(p).dump(1);
  const Plan q = parse_plan(text, "plan.json");
  CHECK(q.signal);
  CHECK(plan_to_json(q).dump(1) == text);
  // The caller's shapes: [N, C, L] in, a 4-D [N, C, L, 1] out as [N, C, L], others unchanged.
  CHECK(caller_shape(q, q.buffers[q.inputs[0]].shape) == Shape{3, 4, 20});
  CHECK(caller_shape(q, Shape{3, 6, 5, 1}) == Shape{3, 6, 5});
  CHECK(caller_shape(q, Shape{3, 5}) == Shape{3, 5});
  CHECK(caller_shape(q, Shape{3, 6, 5, 2}) == Shape{3, 6, 5, 2});
  Plan image = q;
  image.signal = false;
  CHECK(caller_shape(image, Shape{3, 6, 5, 1}) == Shape{3, 6, 5, 1});

  // Its classifier's target [N] is itself; a per-position target [N, L, 1] is given as [N, L].
  CHECK(caller_target_shape(q) == Shape{3});
  LowerOptions train;
  train.train = true;
  Model trunk = signal_model(DType::f32);
  trunk.outputs = {trunk.find("c2")}; // [3, 6, 5, 1]
  const Plan seg = lower_model(trunk, train);
  REQUIRE(seg.buffers[size_t(seg.target)].shape == Shape{3, 5, 1});
  CHECK(caller_target_shape(seg) == Shape{3, 5});
  CHECK(held_target(seg, Tensor(DType::i64, {3, 5}), "t.npy").shape() == Shape{3, 5, 1});
  CHECK(held_target(seg, Tensor(DType::i64, {3, 5, 1}), "t.npy").shape() == Shape{3, 5, 1});
  CHECK_THROWS_WITH_AS(held_target(seg, Tensor(DType::i64, {3, 4}), "t.npy"),
                       doctest::Contains("has shape [3, 4], expected [3, 5]"), Error);

  // Optional: a plan without the key is not a signal plan, and writes no key.
  nlohmann::json j = nlohmann::json::parse(text);
  j.erase("signal");
  const Plan plain = parse_plan(j.dump(), "plan.json");
  CHECK_FALSE(plain.signal);
  CHECK_FALSE(plan_to_json(plain).contains("signal"));
  j["signal"] = 1;
  CHECK_THROWS_WITH_AS(parse_plan(j.dump(), "plan.json"), doctest::Contains("/signal"), Error);

  // A signal plan's input must be [N, C, L, 1].
  Plan wide = q;
  wide.buffers[size_t(wide.inputs[0])].shape = {3, 4, 20, 2};
  expect_rejected(wide, "a signal plan's input is [N, C, L, 1], not [3, 4, 20, 2]");
}
