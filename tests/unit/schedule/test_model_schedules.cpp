// Executing recompute schedules: every strategy's training step on the cpu backend writes
// gradients bit-identical to store-all's, while the measured peak of live activation bytes
// stays within the budget (and within the strategy's prediction).
#include "generator/model/model_json.hpp"
#include "generator/model/overrides.hpp"
#include "generator/schedule/budget.hpp"
#include "generator/schedule/strategy.hpp"
#include "runtime/cpu/backend.hpp"
#include "runtime/error.hpp"
#include "runtime/executor.hpp"
#include "runtime/param_init.hpp"
#include "runtime/weights.hpp"

#include <cstring>
#include <doctest/doctest.h>

using namespace kiln;

namespace {

Model small(const std::string& name, int64_t image, int64_t batch = 1) {
  Model m = load_model(std::string(KILN_SOURCE_ROOT "/models/") + name + ".json");
  ModelOverrides o;
  o.batch = batch;
  o.image = Int2{image, image};
  apply_overrides(m, o);
  return m;
}

struct StepResult {
  std::map<std::string, Tensor> grads;
  int64_t peak = 0;
  double loss = 0;
};

StepResult train(const Plan& p) {
  cpu::CpuBackend be;
  Executor ex(p, be);
  bind_seeded_weights(ex, p, 3);
  Tensor x(DType::f32, p.buffers[p.inputs[0]].shape);
  uint64_t st = 5;
  for (int64_t i = 0; i < x.numel(); ++i) x.set(i, double(splitmix64(st) >> 11) * 0x1.0p-52 - 1);
  ex.write(p.inputs[0], x);
  Tensor t(DType::i64, p.buffers[p.target].shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.set(i, double(i % 2));
  ex.write(p.target, t);
  ex.run("forward");
  ex.run("backward");
  return {collect_grads(ex, p), ex.peak_transient_bytes(), ex.read(p.loss).get(0)};
}

// The smallest budget a strategy meets, from its Infeasible message.
int64_t min_feasible(const TrainingScheduler& ts, Strategy s) {
  try {
    ts.solve(s, 1);
  } catch (const Error& e) {
    const std::string w = e.what();
    const auto at = w.find("smallest feasible budget is ");
    REQUIRE(at != std::string::npos);
    return std::stoll(w.substr(at + 28));
  }
  FAIL("a one-byte budget was accepted");
  return 0;
}

// Every strategy at its smallest feasible budget and halfway to the store-all peak.
void check_model(const Model& m) {
  ScheduleOptions so;
  so.lower.train = true;
  const TrainingScheduler ts(m, load_gpu("h200"), so);
  const TrainingSchedule all = ts.solve(Strategy::store_all, ts.store_all_peak());
  const StepResult ref = train(ts.plan(all));
  CHECK(ref.peak <= ts.store_all_peak()); // the model bounds the plan, and closely
  CHECK(double(ref.peak) >= 0.97 * double(ts.store_all_peak()));
  for (Strategy s : {Strategy::sqrt, Strategy::rotor, Strategy::dtr}) {
    const int64_t lo = min_feasible(ts, s);
    CHECK(lo < ts.store_all_peak());
    for (int64_t budget : {lo, (lo + ts.store_all_peak()) / 2}) {
      const TrainingSchedule sch = ts.solve(s, budget);
      const StepResult r = train(ts.plan(sch));
      INFO(m.name << " " << strategy_name(s) << ": measured " << r.peak << ", predicted " << sch.peak_bytes
                  << ", budget " << budget << " (store-all " << ts.store_all_peak() << ")");
      CHECK(r.peak <= budget);
      CHECK(r.peak <= sch.peak_bytes);
      CHECK(r.loss == ref.loss);
      REQUIRE(r.grads.size() == ref.grads.size());
      for (const auto& [name, g] : ref.grads) {
        const Tensor& h = r.grads.at(name);
        REQUIRE(h.nbytes() == g.nbytes());
        if (std::memcmp(h.bytes(), g.bytes(), g.nbytes()) != 0) FAIL_CHECK("gradient " << name << " differs");
      }
    }
  }
}

} // namespace

TEST_CASE("resnet18 (32x32): schedules give store-all's gradients within their budgets") {
  check_model(small("resnet18", 32, 2));
}

TEST_CASE("densenet121 (32x32): schedules give store-all's gradients within their budgets") {
  check_model(small("densenet121", 32));
}

TEST_CASE("unet (32x32): schedules give store-all's gradients within their budgets") {
  check_model(small("unet", 32));
}

TEST_CASE("rotor beats sqrt on resnet152 at half the store-all peak") {
  const Model m = load_model(KILN_SOURCE_ROOT "/models/resnet152.json");
  ScheduleOptions so;
  so.lower.train = true;
  const TrainingScheduler ts(m, load_gpu("h200"), so);
  const int64_t b = ts.store_all_peak() / 2;
  const TrainingSchedule r = ts.solve(Strategy::rotor, b), q = ts.solve(Strategy::sqrt, b);
  CHECK(r.time_us < q.time_us);
  CHECK(r.peak_bytes <= b);
  CHECK(q.peak_bytes <= b);
}

TEST_CASE("budget syntax") {
  CHECK(parse_budget("123456", 0) == 123456);
  CHECK(parse_budget("700MiB", 0) == 700LL << 20);
  CHECK(parse_budget("12GiB", 0) == 12LL << 30);
  CHECK(parse_budget("1.5GB", 0) == 1500000000LL);
  CHECK(parse_budget("40%", 1000) == 400);
  CHECK_THROWS_AS(parse_budget("12 GiB", 0), Error);
  CHECK_THROWS_AS(parse_budget("-3", 0), Error);
  CHECK_THROWS_AS(parse_budget("lots", 0), Error);
}
