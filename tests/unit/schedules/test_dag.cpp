// DAG problems: validation, the simulator, store-all, chain_to_dag and DTR.
#include "random_problems.hpp"
#include "schedules/chain_strategies.hpp"
#include "schedules/chain_to_dag.hpp"
#include "schedules/dag_strategies.hpp"

#include <doctest/doctest.h>
#include <limits>
#include <stdexcept>

using namespace kiln::sched;
using kiln::sched::testing::random_chain;
using kiln::sched::testing::random_dag;
using kiln::sched::testing::Rng;

namespace {

// x (pinned, 4) -> a (3) -> b (5) -> c (2, output), and c also reads a.
Dag small_dag() {
  Dag g;
  g.ops = {{"x", 0, 4, {}}, {"a", 1, 3, {0}, 1}, {"b", 2, 5, {1}}, {"c", 3, 2, {1, 2}, 2}};
  g.pinned = {0};
  g.outputs = {3};
  return g;
}

DagStep comp(int j) { return {DagStep::compute, j}; }
DagStep fr(int j) { return {DagStep::free, j}; }

void check_dag_result(const Dag& g, const DagResult& r, int64_t budget) {
  const SimResult sim = simulate_dag(g, r.steps);
  REQUIRE_MESSAGE(sim.ok, sim.error);
  CHECK(sim.peak_bytes == r.peak_bytes);
  CHECK(sim.time == doctest::Approx(r.time));
  CHECK(r.peak_bytes <= budget);
}

// A lower bound for any schedule: the pinned bytes plus one op's other inputs, output, temp.
int64_t lower_bound(const Dag& g) {
  int64_t pinned = 0, most = 0;
  for (int j : g.pinned)
    pinned += g.ops[size_t(j)].output_bytes;
  for (size_t j = 0; j < g.ops.size(); ++j) {
    if (std::find(g.pinned.begin(), g.pinned.end(), int(j)) != g.pinned.end()) continue;
    int64_t need = g.ops[j].output_bytes + g.ops[j].temp_bytes;
    for (int i : g.ops[j].inputs)
      if (std::find(g.pinned.begin(), g.pinned.end(), i) == g.pinned.end())
        need += g.ops[size_t(i)].output_bytes;
    most = std::max(most, need);
  }
  return pinned + most;
}

void check_dtr(const Dag& g, int64_t budget) {
  try {
    check_dag_result(g, dtr(g, budget), budget);
  } catch (const Infeasible& e) {
    CHECK(e.min_feasible_bytes > budget);
    CHECK(e.min_feasible_bytes >= lower_bound(g));
    check_dag_result(g, dtr(g, e.min_feasible_bytes), e.min_feasible_bytes);
  }
}

} // namespace

TEST_CASE("dag validation names the op and the problem") {
  small_dag().validate();
  auto rejects = [](const Dag& g, const std::string& what) {
    try {
      g.validate();
      FAIL("accepted");
    } catch (const std::invalid_argument& e) {
      CHECK_MESSAGE(std::string(e.what()).find(what) != std::string::npos, e.what());
    }
  };
  Dag g = small_dag();
  g.ops[1].inputs = {2};
  rejects(g, "dag op 1 'a': input 2 is not an earlier op");
  g = small_dag();
  g.ops[3].inputs = {1, 1};
  rejects(g, "dag op 3 'c': input 1 is repeated");
  g = small_dag();
  g.pinned = {1};
  rejects(g, "dag op 1 'a': pinned ops are given, so they cannot have inputs");
  g = small_dag();
  g.outputs = {9};
  rejects(g, "dag outputs: no op 9");
  g = small_dag();
  g.ops[2].compute_time = -1;
  rejects(g, "dag op 2 'b': compute_time");
  g = small_dag();
  g.ops[2].temp_bytes = -1;
  rejects(g, "dag op 2 'b': temp_bytes");
}

TEST_CASE("the dag simulator's accounting and its errors") {
  const Dag g = small_dag();
  // 4 | a: 4+1+3 -> 7 | b: 12 | c: 12+2+2 = 16 -> 14 | free a, b -> 6.
  SimResult r = simulate_dag(g, {comp(1), comp(2), comp(3), fr(1), fr(2)});
  REQUIRE_MESSAGE(r.ok, r.error);
  CHECK(r.peak_bytes == 16);
  CHECK(r.time == 6);
  // Recompute a after freeing it: 4+1+3, 12, free a -> 9, a again 9+1+3 = 13, c 12+4 = 16.
  r = simulate_dag(g, {comp(1), comp(2), fr(1), comp(1), comp(3)});
  REQUIRE_MESSAGE(r.ok, r.error);
  CHECK(r.time == 7);
  auto has = [&](const std::vector<DagStep>& s, const std::string& what) {
    const SimResult bad = simulate_dag(g, s);
    CHECK_FALSE(bad.ok);
    CHECK_MESSAGE(bad.error.find(what) != std::string::npos, bad.error);
  };
  has({comp(2)}, "step 0 (compute 2 (b)): input 1 (a) is not resident");
  has({comp(1), comp(1)}, "step 1 (compute 1 (a)): op is already resident");
  has({fr(1)}, "op is not resident");
  has({comp(0)}, "op is pinned");
  has({fr(0)}, "op is pinned");
  has({comp(7)}, "no such op");
  has({comp(1), comp(2)}, "incomplete schedule: output 3 (c) is not resident at the end");
  has({comp(1), comp(2), comp(3), fr(3)}, "output 3 (c)");
}

TEST_CASE("dag store-all computes each op once and frees after the last use") {
  Rng rng{21};
  for (int trial = 0; trial < 50; ++trial) {
    const Dag g = random_dag(rng, int(rng.uniform(3, 60)));
    const DagResult r = dag_store_all(g);
    check_dag_result(g, r, r.peak_bytes);
    double total = 0;
    for (size_t j = 2; j < g.ops.size(); ++j)
      total += g.ops[j].compute_time;
    CHECK(r.time == total);
  }
  CHECK(dag_store_all(small_dag()).peak_bytes == 16);
}

TEST_CASE("chain_to_dag builds the chain's training graph") {
  Rng rng{22};
  Chain c = random_chain(rng, 4);
  c.stages[2].saved_bytes = c.stages[2].output_bytes; // no S3 op
  const Dag g = chain_to_dag(c);
  CHECK(g.ops.size() == 1 + 4 + 3 + 4);
  CHECK(g.ops[size_t(g.outputs[0])].name == "B1");
  CHECK(g.ops[size_t(g.outputs[0])].output_bytes == c.input_bytes);
  double extra = 0; // the S ops rerun their stage
  for (const Stage& s : c.stages)
    if (s.saved_bytes > s.output_bytes) extra += s.forward_time;
  CHECK(dag_store_all(g).time == store_all(c).time + extra);
}

TEST_CASE("DTR with room for everything is store-all") {
  Rng rng{23};
  for (int trial = 0; trial < 50; ++trial) {
    const Dag g = random_dag(rng, int(rng.uniform(3, 80)));
    const DagResult all = dag_store_all(g);
    const DagResult unlimited = dtr(g, std::numeric_limits<int64_t>::max());
    check_dag_result(g, unlimited, std::numeric_limits<int64_t>::max());
    CHECK(unlimited.time == all.time);
    CHECK(unlimited.peak_bytes == all.peak_bytes);
    CHECK(dtr(g, all.peak_bytes).time == all.time);
  }
}

TEST_CASE("DTR fits every budget it accepts and names a feasible one otherwise") {
  Rng rng{24};
  int recomputed = 0;
  for (int trial = 0; trial < 60; ++trial) {
    const Dag g = random_dag(rng, int(rng.uniform(3, 120)));
    const int64_t lo = lower_bound(g), hi = dag_store_all(g).peak_bytes;
    for (int k = 0; k < 6; ++k)
      check_dtr(g, rng.uniform(lo - 5, hi));
    CHECK_THROWS_AS(dtr(g, lo - 1), Infeasible);
    try {
      recomputed += dtr(g, lo + (hi - lo) / 3).time > dag_store_all(g).time;
    } catch (const Infeasible&) {
    }
  }
  MESSAGE("DTR recomputed something in ", recomputed, " of 60 random DAGs at a third of the range");
}

TEST_CASE("DTR on training graphs with skip connections") {
  Rng rng{26};
  for (int trial = 0; trial < 30; ++trial) {
    const Dag g = kiln::sched::testing::random_training_dag(rng, int(rng.uniform(1, 80)));
    const DagResult all = dag_store_all(g);
    check_dag_result(g, dtr(g, std::numeric_limits<int64_t>::max()), all.peak_bytes);
    double previous_time = all.time;
    for (int64_t B = all.peak_bytes; B >= all.peak_bytes / 4; B -= std::max<int64_t>(1, B / 8)) {
      check_dtr(g, B);
      try {
        const DagResult r = dtr(g, B);
        CHECK(r.time >= all.time); // recomputation only adds time
        previous_time = r.time;
      } catch (const Infeasible&) {
      }
    }
    CHECK(previous_time >= all.time);
  }
}

TEST_CASE("DTR on chain training graphs, against rotor") {
  Rng rng{25};
  double dtr_total = 0, rotor_total = 0;
  for (int trial = 0; trial < 40; ++trial) {
    Chain c = random_chain(rng, int(rng.uniform(2, 30)), 1, 20);
    for (Stage& s : c.stages)
      s.saved_bytes = s.output_bytes; // one DAG op per forward
    const Dag g = chain_to_dag(c);
    const int64_t hi = store_all(c).peak_bytes;
    for (int k = 0; k < 4; ++k) {
      const int64_t B = rng.uniform(hi / 3, hi);
      check_dtr(g, B);
      try {
        const DagResult d = dtr(g, B);
        const ChainResult r = rotor(c, B, int(B)); // exact slots
        dtr_total += d.time, rotor_total += r.time;
      } catch (const Infeasible&) {
      }
    }
  }
  // Not an ordering: the DAG lets a plain a_i serve its backward (no forward_all needed) and
  // allows non-persistent schedules, so DTR may beat rotor here.
  MESSAGE("over budgets both fit: DTR time / rotor time = ", dtr_total / rotor_total);
  CHECK(rotor_total > 0);
}
