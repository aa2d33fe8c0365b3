// Training recipes in the lowering (LowerOptions::recipe): the update phase's optimizer
// (SGD with weight decay and momentum, Adam with its moments and a host-written step count)
// and the MSE loss of distillation: steps, buffers and validation, several training steps
// against the update written out here, MSE gradients against finite differences of the loss,
// and every recompute strategy giving store-all's MSE gradients bit for bit.
#include "every_op_model.hpp"
#include "finite_difference.hpp"
#include "generator/gpu/gpu_desc.hpp"
#include "generator/lower/lower.hpp"
#include "generator/schedule/strategy.hpp"
#include "runtime/cpu/backend.hpp"
#include "runtime/error.hpp"
#include "runtime/executor.hpp"
#include "runtime/optimizer_state.hpp"
#include "runtime/param_init.hpp"
#include "runtime/weights.hpp"

#include <cmath>
#include <cstring>
#include <doctest/doctest.h>

using namespace kiln;

namespace {

Tensor random_tensor(DType t, const Shape& s, uint64_t seed) {
  Tensor x(t, s);
  uint64_t state = seed;
  for (int64_t i = 0; i < x.numel(); ++i)
    x.set(i, double(splitmix64(state) >> 11) * 0x1.0p-52 - 1.0);
  return x;
}

LowerOptions options(Optimizer o, TrainLoss loss = TrainLoss::cross_entropy) {
  LowerOptions lo;
  lo.train = true;
  lo.lr = 0.05;
  lo.recipe.optimizer = o;
  lo.recipe.loss = loss;
  lo.recipe.weight_decay = 0.01;
  if (o == Optimizer::sgd) lo.recipe.momentum = 0.9;
  lo.recipe.beta1 = 0.8, lo.recipe.beta2 = 0.9, lo.recipe.eps = 1e-6;
  return lo;
}

// Writes the input and a target (classes, or a teacher's logits for MSE).
void feed(Executor& ex, const Plan& p, uint64_t seed) {
  ex.write(p.inputs[0], random_tensor(p.dtype, p.buffers[p.inputs[0]].shape, seed));
  const Buffer& t = p.buffers[p.target];
  if (t.dtype == DType::i64) {
    Tensor c(DType::i64, t.shape);
    for (int64_t i = 0; i < c.numel(); ++i)
      c.set(i, double((i * 3 + seed) % 5));
    ex.write(p.target, c);
  } else {
    ex.write(p.target, random_tensor(t.dtype, t.shape, seed + 1));
  }
}

const Step* find_update(const Plan& p, const std::string& param) {
  for (const Step& s : p.phase("update")->steps)
    if (s.node == param) return &s;
  return nullptr;
}

} // namespace

TEST_CASE("the update phase applies the recipe's optimizer and the plan round-trips") {
  const Model m = every_op_model(DType::f32);
  const Plan adam = lower_model(m, options(Optimizer::adam));
  const int count = adam.find_buffer(kOptimizerStepBuffer);
  REQUIRE(count >= 0);
  CHECK(adam.buffers[count].dtype == DType::i32);
  CHECK(adam.buffers[count].role == BufferRole::optimizer_state);
  int updates = 0;
  for (const ParamBinding& pb : adam.params) {
    const Step* s = find_update(adam, pb.name);
    CHECK((pb.grad >= 0) == (s != nullptr));
    if (!s) continue;
    ++updates;
    CHECK(s->fn == Fn::adam_update);
    CHECK(s->arg("step") == count);
    CHECK(adam.buffers[s->need("m")].name == "opt.m:" + pb.name);
    CHECK(adam.buffers[s->need("v")].role == BufferRole::optimizer_state);
    CHECK(s->adam().beta1 == 0.8);
    CHECK(s->adam().weight_decay == 0.01);
  }
  CHECK(updates == int(adam.phase("update")->steps.size()));
  const Plan sgd = lower_model(m, options(Optimizer::sgd));
  CHECK(sgd.find_buffer(kOptimizerStepBuffer) < 0);
  const Step* s = find_update(sgd, "fc.weight");
  REQUIRE(s);
  CHECK(s->fn == Fn::sgd_update);
  CHECK(s->sgd().momentum == 0.9);
  CHECK(sgd.buffers[s->need("velocity")].dtype == DType::f32);
  // Plain SGD (the default recipe) is as before: no state, no hyperparameters but lr.
  LowerOptions plain;
  plain.train = true;
  const Plan p = lower_model(m, plain);
  CHECK(find_update(p, "fc.weight")->args.size() == 2);
  for (const Plan* q : {&adam, &sgd, &p}) {
    const std::string text = plan_to_json(*q).dump(1);
    CHECK(plan_to_json(parse_plan(text, "plan.json")).dump(1) == text);
  }
  const Plan mse = lower_model(m, options(Optimizer::sgd, TrainLoss::mse));
  CHECK(mse.buffers[mse.target].shape == Shape{2, 5});
  CHECK(mse.buffers[mse.target].dtype == DType::f32);
}

TEST_CASE("plan validation rejects bad optimizer and loss steps") {
  const Plan good = lower_model(every_op_model(DType::f32), options(Optimizer::adam));
  const Plan sgd = lower_model(every_op_model(DType::f32), options(Optimizer::sgd));
  auto fails = [](Plan p, auto mutate, const char* what) {
    mutate(p);
    try {
      parse_plan(plan_to_json(p).dump(), "plan.json");
      FAIL("accepted: " << std::string(what));
    } catch (const Error& e) {
      INFO(std::string(e.what()) << " should say: " << std::string(what));
      CHECK(std::string(e.what()).find(what) != std::string::npos);
    }
  };
  auto first_update = [](Plan& p) -> Step& { return p.phases.back().steps.front(); };
  fails(
      good, [&](Plan& p) { first_update(p).adam().beta2 = 1; }, "betas must be below 1");
  fails(
      good, [&](Plan& p) { first_update(p).adam().eps = 0; }, "eps must be in (0, 1]");
  fails(
      good, [&](Plan& p) { first_update(p).adam().lr = -1; }, "lr must be in");
  fails(
      good, [&](Plan& p) { p.buffers[p.find_buffer(kOptimizerStepBuffer)].dtype = DType::f32; },
      "argument \"step\" has dtype f32");
  fails(
      good, [&](Plan& p) { first_update(p).args.pop_back(); }, "needs argument");
  fails(
      sgd, [&](Plan& p) { first_update(p).sgd().momentum = 0; },
      "a velocity comes with a nonzero momentum");
  fails(
      sgd, [&](Plan& p) { first_update(p).sgd().momentum = 1.5; }, "momentum must be in [0, 1]");
  // Only the optimizer writes its state: a forward step may not.
  fails(
      sgd,
      [&](Plan& p) {
        Step& f = p.phases[0].steps[0];
        for (Arg& a : f.args)
          if (a.role == "y") a.buffer = first_update(p).need("velocity");
      },
      "would overwrite the optimizer_state");
  const Plan mse = lower_model(every_op_model(DType::f32), options(Optimizer::sgd, TrainLoss::mse));
  fails(
      mse,
      [&](Plan& p) {
        p.buffers[p.target].shape = {2, 4};
      },
      "must have the same shape");
  fails(
      mse, [&](Plan& p) { p.buffers[p.target].dtype = DType::i64; },
      "argument \"target\" has dtype i64");
}

TEST_CASE("three training steps equal the optimizer's update written out, state helpers") {
  for (Optimizer o : {Optimizer::sgd, Optimizer::adam}) {
    const LowerOptions lo = options(o);
    const Plan p = lower_model(every_op_model(DType::f64), lo);
    cpu::CpuBackend be;
    Executor ex(p, be);
    bind_seeded_weights(ex, p, 7);
    zero_optimizer_state(ex, p);
    std::map<std::string, std::vector<double>> w, m, v;
    for (const ParamBinding& pb : p.params) {
      const Tensor t = ex.read(pb.buffer);
      for (int64_t i = 0; i < t.numel(); ++i)
        w[pb.name].push_back(t.get(i));
      m[pb.name].assign(w[pb.name].size(), 0.0), v[pb.name].assign(w[pb.name].size(), 0.0);
    }
    const TrainRecipe& r = lo.recipe;
    for (int64_t t = 1; t <= 3; ++t) {
      feed(ex, p, uint64_t(t));
      ex.run("forward");
      ex.run("backward");
      const auto grads = collect_grads(ex, p);
      set_optimizer_step(ex, p, t);
      ex.run("update");
      for (const ParamBinding& pb : p.params) {
        if (pb.grad < 0) continue;
        auto &pw = w[pb.name], &pm = m[pb.name], &pv = v[pb.name];
        for (size_t i = 0; i < pw.size(); ++i) {
          const double d = grads.at(pb.name).get(int64_t(i)) + r.weight_decay * pw[i];
          if (o == Optimizer::sgd) {
            pm[i] = r.momentum * pm[i] + d;
            pw[i] -= lo.lr * pm[i];
          } else {
            pm[i] = r.beta1 * pm[i] + (1 - r.beta1) * d;
            pv[i] = r.beta2 * pv[i] + (1 - r.beta2) * d * d;
            const double bc1 = 1 - std::pow(r.beta1, double(t)),
                         bc2 = 1 - std::pow(r.beta2, double(t));
            pw[i] -= lo.lr / bc1 * pm[i] / (std::sqrt(pv[i]) / std::sqrt(bc2) + r.eps);
          }
        }
      }
    }
    double worst = 0;
    for (const ParamBinding& pb : p.params) {
      const Tensor t = ex.read(pb.buffer);
      for (int64_t i = 0; i < t.numel(); ++i)
        worst = std::max(worst, std::abs(t.get(i) - w[pb.name][size_t(i)]) /
                                    std::max(1.0, std::abs(w[pb.name][size_t(i)])));
    }
    INFO(std::string(o == Optimizer::adam ? "adam" : "sgd")
         << ": worst relative difference " << worst);
    CHECK(worst < 1e-13);
    // The state reads back, restores, and refuses a stranger.
    auto state = read_optimizer_state(ex, p);
    CHECK(state.size() == (o == Optimizer::adam ? 2 : 1) * collect_grads(ex, p).size());
    write_optimizer_state(ex, p, state, "state.safetensors");
    state["opt.m:nothing"] = Tensor(DType::f32, {1});
    CHECK_THROWS_WITH_AS(write_optimizer_state(ex, p, state, "state.safetensors"),
                         doctest::Contains("unexpected"), Error);
    if (o == Optimizer::adam) CHECK_THROWS_AS(set_optimizer_step(ex, p, 0), Error);
  }
}

TEST_CASE("MSE distillation: gradients match finite differences of the loss") {
  const Plan p = lower_model(every_op_model(DType::f64), options(Optimizer::sgd, TrainLoss::mse));
  cpu::CpuBackend be;
  Executor ex(p, be);
  bind_seeded_weights(ex, p, 9);
  feed(ex, p, 4);
  auto loss = [&] {
    ex.run("forward");
    const double l = ex.read(p.loss).get(0);
    ex.run("backward");
    return l;
  };
  loss();
  const auto grads = collect_grads(ex, p);
  int checked = 0;
  for (const ParamBinding& pb : p.params) {
    if (pb.grad < 0) continue;
    checked += check_finite_differences(ex, pb, grads.at(pb.name), loss, 5);
  }
  CHECK(checked > 30);
}

TEST_CASE("MSE distillation: every strategy gives store-all's gradients bit for bit") {
  ScheduleOptions so;
  so.lower = options(Optimizer::adam, TrainLoss::mse);
  const Model m = every_op_model(DType::f32, 4);
  const TrainingScheduler ts(m, load_gpu("h200"), so);
  auto grads = [&](const TrainingSchedule& s) {
    const Plan p = ts.plan(s);
    cpu::CpuBackend be;
    Executor ex(p, be);
    bind_seeded_weights(ex, p, 5);
    feed(ex, p, 6);
    ex.run("forward");
    ex.run("backward");
    return collect_grads(ex, p);
  };
  const auto ref = grads(ts.solve(Strategy::store_all, ts.store_all_peak()));
  for (Strategy s : {Strategy::sqrt, Strategy::rotor, Strategy::dtr}) {
    // The smallest budget the strategy meets, from the message of a budget of one byte.
    int64_t budget = ts.store_all_peak();
    try {
      ts.solve(s, 1);
    } catch (const Error& e) {
      const std::string w = e.what();
      budget = std::stoll(w.substr(w.find("smallest feasible budget is ") + 28));
    }
    INFO(strategy_name(s) << " at " << budget << " of " << ts.store_all_peak());
    const auto g = grads(ts.solve(s, budget));
    for (const auto& [name, t] : ref)
      CHECK_MESSAGE(std::memcmp(t.bytes(), g.at(name).bytes(), t.nbytes()) == 0, name);
  }
}
