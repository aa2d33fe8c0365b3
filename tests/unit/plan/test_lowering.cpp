// The lowering (model -> plan) through the executor and the cpu backend: training
// gradients against finite differences of the loss, memory semantics, and the plan format.
#include "every_op_model.hpp"
#include "expect_rejected.hpp"
#include "finite_difference.hpp"
#include "generator/lower/lower.hpp"
#include "runtime/cpu/backend.hpp"
#include "runtime/error.hpp"
#include "runtime/executor.hpp"
#include "runtime/param_init.hpp"
#include "runtime/weights.hpp"

#include <cmath>
#include <doctest/doctest.h>

using namespace kiln;

namespace {

Tensor random_tensor(DType t, const Shape& s, uint64_t seed) {
  Tensor x(t, s);
  uint64_t state = seed;
  for (int64_t i = 0; i < x.numel(); ++i) x.set(i, double(splitmix64(state) >> 11) * 0x1.0p-52 - 1.0);
  return x;
}

LowerOptions train_options() {
  LowerOptions o;
  o.train = true;
  return o;
}

struct Trainer {
  Plan plan;
  cpu::CpuBackend backend;
  Executor ex;
  Trainer(const Model& m) : plan(lower_model(m, train_options())), ex(plan, backend) {
    bind_seeded_weights(ex, plan, 7);
    ex.write(plan.inputs[0], random_tensor(plan.dtype, plan.buffers[plan.inputs[0]].shape, 11));
    Tensor t(DType::i64, plan.buffers[plan.target].shape);
    for (int64_t i = 0; i < t.numel(); ++i) t.set(i, double((i * 3 + 1) % 5));
    ex.write(plan.target, t);
  }
  double loss() {
    ex.run("forward");
    const double l = ex.read(plan.loss).get(0);
    ex.run("backward"); // frees what the forward kept
    return l;
  }
};

} // namespace

TEST_CASE("training gradients of every op match finite differences of the loss") {
  Trainer t(every_op_model());
  t.loss();
  const auto grads = collect_grads(t.ex, t.plan);
  int checked = 0;
  for (const ParamBinding& p : t.plan.params) {
    if (p.grad < 0) continue;
    checked += check_finite_differences(
        t.ex, p, grads.at(p.name), [&] { return t.loss(); }, 7);
  }
  CHECK(checked > 40);
}

TEST_CASE("every trained parameter gets a gradient buffer and the plan validates") {
  const Model m = every_op_model();
  const Plan p = lower_model(m, train_options());
  int trained = 0;
  for (const ParamBinding& pb : p.params)
    if (p.buffers[pb.buffer].role == BufferRole::param) {
      CHECK(pb.grad >= 0);
      ++trained;
    }
  CHECK(trained == 15); // c1 w,b; bn1 w,b; c2 w; ln w,b; ct w,b; c3 w,b; bn2 w,b; fc w,b
  CHECK(p.phase("update")->steps.size() == 15); // one SGD step per trained parameter
  // The plan frees every transient buffer by the end of the backward phase.
  cpu::CpuBackend be;
  Executor ex(p, be);
  bind_seeded_weights(ex, p, 1);
  ex.write(p.inputs[0], random_tensor(p.dtype, p.buffers[p.inputs[0]].shape, 3));
  ex.write(p.target, Tensor(DType::i64, p.buffers[p.target].shape));
  ex.run("forward");
  ex.run("backward");
  CHECK(ex.live_transient_bytes() == 0);
  CHECK(ex.peak_transient_bytes() > 0);
  CHECK(ex.peak_transient_bytes() <= p.arena_bytes);
}

TEST_CASE("inference in f32 equals f64 within the f32 tolerance") {
  auto run = [](DType t) {
    const Model m = every_op_model(t);
    const Plan p = lower_model(m, {});
    cpu::CpuBackend be;
    Executor ex(p, be);
    bind_seeded_weights(ex, p, 5);
    ex.write(p.inputs[0], random_tensor(DType::f64, p.buffers[p.inputs[0]].shape, 9));
    ex.run("forward");
    return ex.read(p.outputs[0]).to(DType::f64);
  };
  const Tensor a = run(DType::f32), b = run(DType::f64);
  double num = 0, den = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    num += (a.get(i) - b.get(i)) * (a.get(i) - b.get(i));
    den += b.get(i) * b.get(i);
  }
  CHECK(std::sqrt(num / den) < 1e-5);
}

TEST_CASE("a plan survives its JSON form unchanged") {
  const Plan p = lower_model(every_op_model(DType::f32), train_options());
  const std::string text = plan_to_json(p).dump(1);
  const Plan q = parse_plan(text, "plan.json");
  CHECK(plan_to_json(q).dump(1) == text);
}

TEST_CASE("a kernel's thread-block cluster: written where it has one, read back, checked") {
  Plan p = lower_model(every_op_model(DType::f32), {});
  Kernel k;
  k.name = k.entry = "clustered";
  k.image = "kernels/clustered.cubin";
  k.grid = {4, 1, 1};
  k.block = {384, 1, 1};
  k.cluster = {2, 1, 1};
  p.kernels.push_back(k);
  k.name = k.entry = "alone";
  k.cluster = {1, 1, 1};
  p.kernels.push_back(k);
  const nlohmann::ordered_json j = plan_to_json(p);
  CHECK(j["kernels"][0]["cluster"] == nlohmann::json::array({2, 1, 1}));
  CHECK(!j["kernels"][1].contains("cluster"));
  const Plan q = parse_plan(j.dump(), "plan.json");
  CHECK(q.kernels[0].cluster == std::array<int64_t, 3>{2, 1, 1});
  CHECK(q.kernels[0].clustered());
  CHECK(!q.kernels[1].clustered());
  Plan bad = p;
  bad.kernels[0].grid = {3, 1, 1};
  expect_rejected(bad, "not a multiple of the cluster");
  bad = p;
  bad.kernels[0].cluster = {4, 4, 1};
  bad.kernels[0].grid = {4, 4, 1};
  expect_rejected(bad, "more than 8 blocks per cluster");
}

TEST_CASE("plan validation rejects lies") {
  const Plan good = lower_model(every_op_model(DType::f32), {});
  auto fails = [&](auto mutate, const char* what) {
    Plan p = good;
    mutate(p);
    expect_rejected(p, what);
  };
  fails([](Plan& p) { p.arena_bytes = 16; }, "outside the arena");
  fails([](Plan& p) { p.buffers[p.find_buffer("act:c1")].shape = {2, 4, 9, 8}; }, "expected [2, 4, 9, 9]");
  fails([](Plan& p) { p.phases[0].steps[0].args[0].role = "z"; }, "takes no argument \"z\"");
  fails([](Plan& p) { p.phases[0].steps[0].args.pop_back(); }, "needs argument \"y\"");
  fails([](Plan& p) { p.phases[0].steps[0].args.back().buffer = p.inputs[0]; }, "would overwrite the input");
  fails([](Plan& p) { p.buffers[p.find_buffer("act:c1")].dtype = DType::i64; }, "expected a float type");
  fails([](Plan& p) { p.buffers[p.find_buffer("act:fc")].layout = Layout::nhwc; }, "only 4-D buffers");
  fails([](Plan& p) { p.phases[0].steps[0].attrs.stride = {2, 2}; }, "expected [2, 4, 5, 5]");
  fails([](Plan& p) {
    Step f;
    f.kind = StepKind::free;
    f.buffer = p.inputs[0];
    p.phases[0].steps.push_back(f);
  }, "not a transient base buffer");
  // Guards and compacted forms (the sparse family).
  const auto conv_step = [](Plan& p) -> Step& {
    for (Step& s : p.phases[0].steps)
      if (s.fn == Fn::conv2d_forward) return s;
    throw std::logic_error("no conv");
  };
  const auto add_count = [](Plan& p) {
    p.buffers.push_back(Buffer{"nnz", {1}, DType::i32, BufferRole::activation, 0, -1});
    p.arena_bytes += 256;
    p.buffers.back().offset = p.arena_bytes - 256;
    return int(p.buffers.size()) - 1;
  };
  fails([&](Plan& p) { conv_step(p).sparse.guard = Guard::dense; }, "a guarded step reads \"nnz\"");
  fails([&](Plan& p) { conv_step(p).args.push_back({"nnz", add_count(p)}); }, "reads \"nnz\" but has no guard");
  fails([&](Plan& p) {
    Step& s = conv_step(p);
    s.sparse.guard = Guard::sparse, s.sparse.threshold = -1;
    s.args.push_back({"nnz", add_count(p)});
  }, "threshold must not be negative");
  fails([&](Plan& p) {
    for (Step& s : p.phases[0].steps)
      if (s.fn == Fn::relu_forward) {
        s.sparse.guard = Guard::dense;
        return;
      }
  }, "relu.forward cannot be guarded");
  fails([&](Plan& p) {
    Step& s = conv_step(p);
    s.fn = Fn::conv2d_forward_sparse;
    const Shape x = p.buffers[s.need("x")].shape;
    for (const char* r : {"values", "index", "count"}) {
      const bool count = std::string(r) == "count";
      p.buffers.push_back(Buffer{r, count ? Shape{x[0] * x[2] * x[3], 2} : Shape{x[0] * x[2] * x[3], 2, 7},
                                 std::string(r) == "values" ? DType::f32 : DType::u8,
                                 BufferRole::activation, 0, -1});
      p.buffers.back().offset = p.arena_bytes;
      p.arena_bytes += (p.buffers.back().bytes() + 255) / 256 * 256;
      s.args.push_back({r, int(p.buffers.size()) - 1});
    }
  }, "is not the form of");
  fails([&](Plan& p) {
    Step& s = conv_step(p);
    s.sparse.guard = Guard::dense;
    s.args.push_back({"nnz", add_count(p)});
    p.buffers.back().dtype = DType::u8;
  }, "argument \"nnz\" has dtype u8");
  // Structural JSON errors name the pointer.
  std::string text = plan_to_json(good).dump();
  const std::string key = "\"act:c1\"";
  text.replace(text.rfind(key), key.size(), "\"ghost\"");
  CHECK_THROWS_WITH_AS(parse_plan(text, "plan.json"), doctest::Contains("unknown buffer \"ghost\""), Error);
}

TEST_CASE("the executor enforces the memory semantics") {
  Plan p = lower_model(every_op_model(DType::f32), {});
  cpu::CpuBackend be;
  SUBCASE("reading a freed buffer") {
    auto& steps = p.phases[0].steps;
    // Move the first free to the front: c1's output is then freed before it is written.
    for (size_t i = 0; i < steps.size(); ++i)
      if (steps[i].kind == StepKind::free) {
        Step f = steps[i];
        steps.erase(steps.begin() + long(i));
        steps.insert(steps.begin() + 1, f);
        break;
      }
    Executor ex(p, be);
    bind_seeded_weights(ex, p, 1);
    ex.write(p.inputs[0], random_tensor(DType::f32, p.buffers[p.inputs[0]].shape, 1));
    CHECK_THROWS_WITH_AS(ex.run("forward"), doctest::Contains("not written yet or already freed"), Error);
  }
  SUBCASE("two live buffers sharing bytes") {
    // Give every transient buffer offset 0: the second one alive overlaps the first.
    for (Buffer& b : p.buffers)
      if (b.role == BufferRole::activation) b.offset = 0;
    int64_t top = 1 << 20;
    for (Buffer& b : p.buffers)
      if (b.role != BufferRole::activation && b.view_of < 0) {
        b.offset = top;
        top += (b.bytes() + 255) / 256 * 256;
      }
    for (Buffer& b : p.buffers)
      if (b.view_of >= 0) b.offset = p.buffers[b.view_of].offset;
    p.arena_bytes = top;
    Executor ex(p, be);
    bind_seeded_weights(ex, p, 1);
    ex.write(p.inputs[0], random_tensor(DType::f32, p.buffers[p.inputs[0]].shape, 1));
    CHECK_THROWS_WITH_AS(ex.run("forward"), doctest::Contains("overlaps the live buffer"), Error);
  }
  SUBCASE("writing a transient buffer from the host") {
    Executor ex(p, be);
    CHECK_THROWS_WITH_AS(ex.write("act:c1", Tensor(DType::f32, {2, 4, 9, 9})), doctest::Contains("transient"), Error);
    CHECK_THROWS_WITH_AS(ex.write(p.inputs[0], Tensor(DType::f32, {1, 3, 9, 9})), doctest::Contains("expected shape"), Error);
  }
}

TEST_CASE("the reference stages f16 and nhwc buffers") {
  auto run = [](const Model& m, auto mutate) {
    Plan p = lower_model(m, {});
    mutate(p);
    cpu::CpuBackend be;
    Executor ex(p, be);
    bind_seeded_weights(ex, p, 5);
    ex.write(p.inputs[0], random_tensor(DType::f64, p.buffers[p.inputs[0]].shape, 9));
    ex.run("forward");
    return ex.read(p.outputs[0]).to(DType::f64);
  };
  const Tensor ref = run(every_op_model(DType::f32), [](Plan&) {});
  // nhwc activations give bit-identical results (staging converts exactly).
  const Tensor nhwc = run(every_op_model(DType::f32), [](Plan& p) {
    for (const char* b : {"act:c1", "act:r1", "act:add", "act:up"}) p.buffers[p.find_buffer(b)].layout = Layout::nhwc;
  });
  for (int64_t i = 0; i < ref.numel(); ++i) CHECK(nhwc.get(i) == ref.get(i));
  // f16 storage stays within the f16 tolerance.
  const Tensor half = run(every_op_model(DType::f16), [](Plan&) {});
  double num = 0, den = 0;
  for (int64_t i = 0; i < ref.numel(); ++i) {
    num += (half.get(i) - ref.get(i)) * (half.get(i) - ref.get(i));
    den += ref.get(i) * ref.get(i);
  }
  CHECK(std::sqrt(num / den) < 1e-2);
  CHECK(std::sqrt(num / den) > 0); // really rounded through f16
}
