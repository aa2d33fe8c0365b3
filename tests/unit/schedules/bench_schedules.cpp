// Times rotor on a 100-stage chain at 500 slots and DTR on 1000-op DAGs (not a test).
#include "random_problems.hpp"
#include "schedules/chain_strategies.hpp"
#include "schedules/chain_to_dag.hpp"
#include "schedules/dag_strategies.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <initializer_list>
#include <vector>

using namespace kiln::sched;
using namespace kiln::sched::testing;

namespace {

// Median wall time of `runs` calls, in milliseconds.
double median_ms(int runs, const std::function<void()>& f) {
  std::vector<double> ms;
  for (int r = 0; r < runs; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

int64_t min_budget(const std::function<void(int64_t)>& f) {
  try {
    f(0);
  } catch (const Infeasible& e) {
    return e.min_feasible_bytes;
  }
  return 0;
}

// DTR at fractions of store-all's peak (never below the smallest feasible budget, which
// `search` finds first).
void bench_dtr(const char* what, const Dag& g, bool search, std::initializer_list<double> fs) {
  const DagResult all = dag_store_all(g);
  int64_t lo = 0;
  if (search) {
    const double ms = median_ms(1, [&] { lo = min_budget([&](int64_t b) { dtr(g, b); }); });
    std::printf("dtr, %s: smallest feasible budget %.0f%% of store-all, found in %.1f ms\n", what,
                100.0 * double(lo) / double(all.peak_bytes), ms);
  }
  for (double f : fs) {
    const int64_t B = std::max(lo, int64_t(double(all.peak_bytes) * f));
    DagResult r;
    const double ms = median_ms(3, [&] { r = dtr(g, B); });
    std::printf("dtr, %s (%zu ops), budget %.0f%% of store-all: %.2f ms, time x%.3f of "
                "store-all\n",
                what, g.ops.size(), 100.0 * double(B) / double(all.peak_bytes), ms,
                r.time / all.time);
  }
}

} // namespace

int main() {
  Rng rng{2024};
  const Chain c = random_chain(rng, 100, 1, 1 << 20);
  const ChainResult all = store_all(c);
  int64_t lo = 0;
  const double search = median_ms(1, [&] { lo = min_budget([&](int64_t b) { rotor(c, b); }); });
  std::printf("rotor, 100 stages: smallest feasible budget %.1f%% of store-all, found in %.1f ms\n",
              100.0 * double(lo) / double(all.peak_bytes), search);
  for (double f : {0.75, 0.5, 0.25}) {
    const int64_t B = lo + int64_t(double(all.peak_bytes - lo) * f);
    ChainResult r;
    const double ms = median_ms(5, [&] { r = rotor(c, B, 500); });
    std::printf("rotor, 100 stages, 500 slots, budget %.0f%% of store-all: %.1f ms, time x%.3f "
                "of store-all\n",
                100.0 * double(B) / double(all.peak_bytes), ms, r.time / all.time);
  }
  bench_dtr("training graph of a 499-layer network", random_training_dag(rng, 499, 1 << 20), true,
            {0.75, 0.5, 0.25});
  bench_dtr("chain_to_dag of 400 stages", chain_to_dag(random_chain(rng, 400, 1, 1 << 20)), true,
            {0.75, 0.5, 0.25});
  // Every op reads a uniformly random earlier op a quarter of the time, so rematerialising
  // anything recomputes most of its ancestry: DTR thrashes soon below store-all (and finding
  // its smallest budget takes seconds), shown at one budget.
  bench_dtr("random DAG with far edges", random_dag(rng, 1000, 20, 1 << 20), false, {0.9});
}
