// Dynamic Tensor Rematerialization (Kirisame et al., ICLR 2021) run offline: the runtime's
// decisions on a known graph, recorded as a static schedule.
#include "schedules/dag_strategies.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace kiln::sched {

namespace {

// Union-find over evicted tensors; a class keeps the sum of its members' compute costs, so
// the cost of recomputing a neighbourhood is read at its root (the paper's h_DTR^eq).
class EvictedClasses {
public:
  int add(double cost) {
    parent_.push_back(int(parent_.size()));
    cost_.push_back(cost);
    return int(parent_.size()) - 1;
  }
  int find(int x) {
    while (parent_[size_t(x)] != x)
      x = parent_[size_t(x)] = parent_[size_t(parent_[size_t(x)])];
    return x;
  }
  void unite(int a, int b) {
    a = find(a), b = find(b);
    if (a == b) return;
    parent_[size_t(b)] = a;
    cost_[size_t(a)] += cost_[size_t(b)];
  }
  double& cost(int root) { return cost_[size_t(root)]; }

private:
  std::vector<int> parent_;
  std::vector<double> cost_;
};

class Dtr {
public:
  Dtr(const Dag& dag, int64_t budget) : g_(dag), budget_(budget) {
    const size_t n = dag.ops.size();
    resident_.assign(n, 0), computed_.assign(n, 0), pinned_.assign(n, 0), output_.assign(n, 0);
    uses_left_.assign(n, 0), lock_.assign(n, 0), node_.assign(n, -1), pos_.assign(n, -1);
    last_access_.assign(n, 0), consumers_.resize(n);
    for (size_t j = 0; j < n; ++j)
      for (int i : dag.ops[j].inputs)
        ++uses_left_[size_t(i)], consumers_[size_t(i)].push_back(int(j));
    for (int j : dag.outputs)
      output_[size_t(j)] = 1;
    for (int j : dag.pinned)
      if (!pinned_[size_t(j)]) {
        pinned_[size_t(j)] = resident_[size_t(j)] = computed_[size_t(j)] = 1;
        memory_ += dag.ops[size_t(j)].output_bytes;
      }
    // At its tightest budgets DTR computes each op about twice; 64 times is thrashing.
    compute_limit_ = 64 * int64_t(n) + 4096;
  }

  // False when the budget cannot be met.
  bool run() {
    if (memory_ > budget_) return false;
    for (size_t j = 0; j < g_.ops.size(); ++j) {
      if (pinned_[j]) continue;
      const std::vector<int>& in = g_.ops[j].inputs;
      for (int i : in) {
        if (!ensure(i)) return false;
        ++lock_[size_t(i)];
      }
      if (!compute(int(j))) return false;
      for (int i : in)
        --lock_[size_t(i)], --uses_left_[size_t(i)];
      for (int i : in)
        maybe_banish(i);
      maybe_banish(int(j));
    }
    for (int j : g_.outputs) { // outputs evicted on the way come back, held together
      if (!ensure(j)) return false;
      ++lock_[size_t(j)];
    }
    return true;
  }

  std::vector<DagStep> steps;

private:
  bool evicted(int t) const { return computed_[size_t(t)] && !resident_[size_t(t)]; }

  template <class F> void for_neighbours(int t, F&& f) const {
    for (int u : g_.ops[size_t(t)].inputs)
      f(u);
    for (int u : consumers_[size_t(t)])
      f(u);
  }

  // Makes t resident, recomputing its evicted inputs first (depth-first). Inputs recomputed
  // only for this stay resident as ordinary candidates rather than being banished again:
  // a sibling's rematerialisation often needs the same ancestors.
  bool ensure(int t) {
    if (resident_[size_t(t)]) return true;
    const std::vector<int>& in = g_.ops[size_t(t)].inputs;
    for (int i : in) {
      if (!ensure(i)) return false;
      ++lock_[size_t(i)];
    }
    const bool ok = compute(t);
    for (int i : in)
      --lock_[size_t(i)];
    return ok;
  }

  bool compute(int t) {
    const DagOp& op = g_.ops[size_t(t)];
    ++clock_; // staleness of everything not touched by this op is at least 1
    while (memory_ + op.temp_bytes + op.output_bytes > budget_)
      if (!evict_one()) return false;
    if (++computes_ > compute_limit_) return false;
    if (evicted(t)) { // leaves its class: the paper's approximation of splitting it
      double& c = classes_.cost(classes_.find(node_[size_t(t)]));
      c = std::max(0.0, c - op.compute_time);
      node_[size_t(t)] = -1;
    }
    steps.push_back({DagStep::compute, t});
    memory_ += op.output_bytes;
    resident_[size_t(t)] = computed_[size_t(t)] = 1;
    pos_[size_t(t)] = int(resident_list_.size());
    resident_list_.push_back(t);
    last_access_[size_t(t)] = clock_;
    for (int i : op.inputs)
      last_access_[size_t(i)] = clock_;
    return true;
  }

  double score(int t) {
    double cost = g_.ops[size_t(t)].compute_time;
    roots_.clear();
    for_neighbours(t, [&](int u) {
      if (!evicted(u)) return;
      const int r = classes_.find(node_[size_t(u)]);
      if (std::find(roots_.begin(), roots_.end(), r) != roots_.end()) return;
      roots_.push_back(r);
      cost += classes_.cost(r);
    });
    const double staleness = double(clock_ - last_access_[size_t(t)]);
    return cost / (double(g_.ops[size_t(t)].output_bytes) * staleness);
  }

  bool evict_one() {
    int best = -1;
    double best_h = std::numeric_limits<double>::infinity();
    for (int t : resident_list_) {
      if (lock_[size_t(t)] || g_.ops[size_t(t)].output_bytes == 0 || !g_.ops[size_t(t)].evictable)
        continue;
      const double h = score(t);
      if (best < 0 || h < best_h || (h == best_h && t < best)) best = t, best_h = h;
    }
    if (best < 0) return false;
    evict(best);
    return true;
  }

  void evict(int t) {
    steps.push_back({DagStep::free, t});
    memory_ -= g_.ops[size_t(t)].output_bytes;
    resident_[size_t(t)] = 0;
    const int last = resident_list_.back(); // swap-remove from the candidates
    resident_list_[size_t(pos_[size_t(t)])] = last;
    pos_[size_t(last)] = pos_[size_t(t)];
    resident_list_.pop_back();
    node_[size_t(t)] = classes_.add(g_.ops[size_t(t)].compute_time);
    for_neighbours(t, [&](int u) {
      if (evicted(u) && u != t) classes_.unite(node_[size_t(t)], node_[size_t(u)]);
    });
  }

  // Banishing: a tensor no later op reads is freed at once.
  void maybe_banish(int t) {
    if (resident_[size_t(t)] && !pinned_[size_t(t)] && !output_[size_t(t)] &&
        uses_left_[size_t(t)] == 0 && lock_[size_t(t)] == 0)
      evict(t);
  }

  const Dag& g_;
  int64_t budget_, memory_ = 0, clock_ = 0, computes_ = 0, compute_limit_ = 0;
  std::vector<char> resident_, computed_, pinned_, output_;
  std::vector<int> uses_left_, lock_, node_, pos_, resident_list_, roots_;
  std::vector<int64_t> last_access_;
  std::vector<std::vector<int>> consumers_;
  EvictedClasses classes_;
};

std::vector<DagStep> run_dtr(const Dag& dag, int64_t budget, bool& ok) {
  Dtr d(dag, budget);
  ok = d.run();
  return std::move(d.steps);
}

} // namespace

DagResult dtr(const Dag& dag, int64_t budget) {
  dag.validate();
  bool ok = false;
  std::vector<DagStep> steps = run_dtr(dag, budget, ok);
  if (ok) {
    DagResult r = evaluate_dag(dag, std::move(steps));
    if (r.peak_bytes > budget) throw std::logic_error("dtr: schedule exceeds its budget");
    return r;
  }
  // No schedule computes op j in less than the pinned bytes plus j's other inputs, output and
  // workspace; at dag_store_all's peak dtr never evicts. DTR is not monotone in the budget,
  // so bisection finds a feasible budget, the least one in most cases.
  int64_t pinned_bytes = 0, bound = 0;
  std::vector<char> pinned(dag.ops.size(), 0);
  for (int j : dag.pinned)
    if (!pinned[size_t(j)]) pinned[size_t(j)] = 1, pinned_bytes += dag.ops[size_t(j)].output_bytes;
  for (size_t j = 0; j < dag.ops.size(); ++j) {
    if (pinned[j]) continue;
    int64_t need = dag.ops[j].output_bytes + dag.ops[j].temp_bytes;
    for (int i : dag.ops[j].inputs)
      if (!pinned[size_t(i)]) need += dag.ops[size_t(i)].output_bytes;
    bound = std::max(bound, need);
  }
  int64_t lo = std::max(budget, pinned_bytes + bound - 1), hi = dag_store_all(dag).peak_bytes;
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    run_dtr(dag, mid, ok);
    (ok ? hi : lo) = mid;
  }
  throw Infeasible("dtr: cannot fit " + std::to_string(budget) +
                       " bytes; the smallest feasible "
                       "budget found is " +
                       std::to_string(hi) + " bytes",
                   hi);
}

} // namespace kiln::sched
