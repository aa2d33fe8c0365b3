// Chain strategies against the simulator, each other and the exhaustive oracle.
#include "random_problems.hpp"
#include "schedules/chain_strategies.hpp"

#include <chrono>
#include <doctest/doctest.h>
#include <functional>

using namespace kiln::sched;
using kiln::sched::testing::random_chain;
using kiln::sched::testing::Rng;

namespace {

// The smallest budget any schedule meets, from the oracle.
int64_t oracle_min(const Chain& c) {
  try {
    exhaustive(c, 0);
  } catch (const Infeasible& e) {
    return e.min_feasible_bytes;
  }
  FAIL("a zero budget fit");
  return 0;
}

// A strategy's result is what the simulator says about its ops, within the budget.
void check_result(const Chain& c, const ChainResult& r, int64_t budget) {
  const SimResult sim = simulate(c, r.ops);
  REQUIRE_MESSAGE(sim.ok, sim.error);
  CHECK(sim.peak_bytes == r.peak_bytes);
  CHECK(sim.time == doctest::Approx(r.time));
  CHECK(r.peak_bytes <= budget);
}

// Calls run(budget); on Infeasible, checks that its minimum is above the budget, that the
// minimum works and (when `exact_min`) that one byte less does not.
void check_budget(const Chain& c, int64_t budget, const std::function<ChainResult(int64_t)>& run,
                  bool exact_min = true) {
  try {
    check_result(c, run(budget), budget);
  } catch (const Infeasible& e) {
    const int64_t least = e.min_feasible_bytes;
    CHECK(least > budget);
    check_result(c, run(least), least);
    if (exact_min) CHECK_THROWS_AS(run(least - 1), Infeasible);
  }
}

} // namespace

TEST_CASE("store_all saves everything once") {
  Rng rng{1};
  const Chain c = random_chain(rng, 5);
  const ChainResult r = store_all(c);
  check_result(c, r, r.peak_bytes);
  double total = 0;
  for (const Stage& s : c.stages)
    total += s.forward_time + s.backward_time;
  CHECK(r.time == total);
  CHECK(r.ops.size() == 10);
}

TEST_CASE("sqrt schedules follow checkpoint_sequential's segments") {
  Rng rng{2};
  const Chain c = random_chain(rng, 10);
  for (int n = 1; n <= 10; ++n) {
    const std::vector<ChainOp> ops = sqrt_schedule(c, n);
    const SimResult sim = simulate(c, ops);
    REQUIRE_MESSAGE(sim.ok, sim.error);
    // Stages outside the last segment run twice; the last one has L - (n-1)*(L/n) stages.
    int forwards = 0, checkpoints = 0;
    for (const ChainOp& op : ops) {
      forwards += op.kind <= ChainOp::forward_all;
      checkpoints += op.kind == ChainOp::forward_input;
    }
    CHECK(forwards == 10 + (n - 1) * (10 / n));
    CHECK(checkpoints == n - 1);
  }
  CHECK(sqrt_segments(c, store_all(c).peak_bytes).time == store_all(c).time);
  CHECK_THROWS_AS(sqrt_schedule(c, 0), std::invalid_argument);
  CHECK_THROWS_AS(sqrt_schedule(c, 11), std::invalid_argument);
}

TEST_CASE("rotor equals the exhaustive search on small chains") {
  Rng rng{3};
  int compared = 0, faster_any = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const int L = int(rng.uniform(2, 6));
    const int64_t unit = trial % 3 == 0 ? 1024 : 1; // sizes in units; slots of one unit
    const Chain c = random_chain(rng, L, unit, 6);
    const int64_t lo = oracle_min(c), hi = store_all(c).peak_bytes;
    REQUIRE(lo <= hi);
    for (int k = 0; k < 4; ++k) {
      const int64_t B = k == 0 ? lo : k == 1 ? hi : lo + unit * rng.uniform(0, (hi - lo) / unit);
      const ChainResult e = exhaustive(c, B);
      const ChainResult r = rotor(c, B, int(B / unit));
      check_result(c, e, B);
      check_result(c, r, B);
      CHECK_MESSAGE(r.time == e.time, "L=", L, " budget=", B, " trial=", trial);
      ++compared;
      if (L <= 4) { // dropping checkpoints can only help
        const ChainResult any = exhaustive(c, B, ExhaustiveScope::all);
        check_result(c, any, B);
        CHECK(any.time <= e.time);
        faster_any += any.time < e.time;
      }
    }
  }
  MESSAGE("compared rotor with the oracle at ", compared,
          " budgets; non-persistent schedules "
          "were faster at ",
          faster_any);
}

TEST_CASE("a non-persistent schedule can beat rotor") {
  // Found by the oracle: keep a_1 through backward 4, use it to recompute a_2 and drop it
  // there (forward_none 2), which makes room for backward 3; recompute a_1 from a_0 later.
  Chain c;
  c.input_bytes = 2;
  c.stages = {{"s1", 10, 19, 2, 7, 3, 2},
              {"s2", 5, 20, 6, 6, 2, 3},
              {"s3", 7, 1, 4, 4, 0, 2},
              {"s4", 5, 8, 5, 10, 3, 2}};
  const ChainResult r = rotor(c, 24, 24);
  CHECK(r.time == 122);
  CHECK(exhaustive(c, 24).time == 122);
  const ChainResult any = exhaustive(c, 24, ExhaustiveScope::all);
  check_result(c, any, 24);
  CHECK(any.time == 112);
}

TEST_CASE("Infeasible carries the smallest feasible budget") {
  Rng rng{4};
  for (int trial = 0; trial < 100; ++trial) {
    const int64_t unit = trial % 2 ? 1024 : 1;
    const Chain c = random_chain(rng, int(rng.uniform(1, 6)), unit, 6);
    const int64_t lo = oracle_min(c);
    CHECK_NOTHROW(exhaustive(c, lo));
    CHECK_THROWS_AS(exhaustive(c, lo - 1), Infeasible);
    // Slot-exact: at lo / unit slots of one unit, rotor's minimum is the oracle's, and one
    // slot less fails.
    const int n = int(lo / unit);
    try {
      rotor(c, lo - unit, n);
      FAIL("rotor fit below the oracle's minimum");
    } catch (const Infeasible& e) {
      CHECK(e.min_feasible_bytes == lo);
      CHECK(std::string(e.what()).find(std::to_string(lo)) != std::string::npos);
    }
    CHECK_NOTHROW(rotor(c, lo, n));
    check_budget(c, 0, [&](int64_t B) { return rotor(c, B, n); });
    check_budget(c, 0, [&](int64_t B) { return sqrt_segments(c, B); });
  }
}

TEST_CASE("every strategy fits its budget or says what would (random sizes, coarse slots)") {
  Rng rng{5};
  for (int trial = 0; trial < 150; ++trial) {
    const int L = int(rng.uniform(1, 14));
    const Chain c = random_chain(rng, L, 1, 100000); // sizes no slot size divides
    const int64_t hi = store_all(c).peak_bytes;
    for (int k = 0; k < 6; ++k) {
      const int64_t B = rng.uniform(0, hi + hi / 5);
      check_budget(c, B, [&](int64_t b) { return sqrt_segments(c, b); });
      for (int slots : {7, 50, 500})
        check_budget(c, B, [&](int64_t b) { return rotor(c, b, slots); });
      if (L <= 5) check_budget(c, B, [&](int64_t b) { return exhaustive(c, b); });
    }
  }
}

TEST_CASE("rotor's time never increases with the budget and reaches store-all's") {
  Rng rng{6};
  for (int trial = 0; trial < 40; ++trial) {
    const Chain c = random_chain(rng, int(rng.uniform(1, 20)), 1, 8);
    const ChainResult all = store_all(c);
    REQUIRE(all.peak_bytes <= 1000);
    int64_t lo = 0;
    try {
      rotor(c, 0, 1000);
    } catch (const Infeasible& e) {
      lo = e.min_feasible_bytes;
    }
    double previous = 1e300;
    for (int64_t B = lo; B <= all.peak_bytes + 3; ++B) {
      const ChainResult r = rotor(c, B, 1000); // slots of one byte: exact
      CHECK(r.time <= previous);
      previous = r.time;
      if (B >= all.peak_bytes) CHECK(r.time == all.time);
      double sqrt_time = 1e300; // sqrt's schedules are among rotor's, so never faster
      try {
        sqrt_time = sqrt_segments(c, B).time;
      } catch (const Infeasible&) {
      }
      CHECK(r.time <= sqrt_time);
    }
  }
}

TEST_CASE("rotor handles a 100-stage chain at 500 slots quickly") {
  Rng rng{7};
  const Chain c = random_chain(rng, 100, 1, 1 << 20);
  const int64_t hi = store_all(c).peak_bytes;
  int64_t lo = 0;
  try {
    rotor(c, 0);
  } catch (const Infeasible& e) {
    lo = e.min_feasible_bytes;
  }
  const auto t0 = std::chrono::steady_clock::now();
  const ChainResult r = rotor(c, (lo + hi) / 2);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  MESSAGE("rotor, 100 stages, 500 slots: ", seconds, " s, time ", r.time, " vs store-all ",
          store_all(c).time);
  check_result(c, r, (lo + hi) / 2);
  CHECK(seconds < 10);
}

TEST_CASE("strategies reject bad arguments") {
  Rng rng{8};
  const Chain c = random_chain(rng, 9);
  CHECK_THROWS_AS(exhaustive(c, 1000), std::invalid_argument); // too long for the oracle
  CHECK_THROWS_AS(rotor(c, 1000, 0), std::invalid_argument);
  CHECK_THROWS_AS(rotor(c, -1), std::invalid_argument);
  CHECK_THROWS_AS(rotor(c, 1000, 2), std::invalid_argument); // never fits in two slots
  CHECK_THROWS_AS(store_all(Chain{}), std::invalid_argument);
}
