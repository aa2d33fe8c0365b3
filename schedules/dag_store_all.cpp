// Store-all on a DAG: no recomputation, each tensor freed after its last consumer.
#include "schedules/dag_strategies.hpp"

namespace kiln::sched {

DagResult dag_store_all(const Dag& dag) {
  dag.validate();
  const size_t n = dag.ops.size();
  std::vector<int> last_use(n, -1);
  std::vector<char> pinned(n, 0), keep(n, 0); // outputs and pinned ops are never freed
  for (size_t j = 0; j < n; ++j)
    for (int i : dag.ops[j].inputs)
      last_use[size_t(i)] = int(j);
  for (int j : dag.pinned)
    pinned[size_t(j)] = keep[size_t(j)] = 1;
  for (int j : dag.outputs)
    keep[size_t(j)] = 1;

  std::vector<DagStep> steps;
  for (size_t j = 0; j < n; ++j) {
    if (pinned[j]) continue;
    steps.push_back({DagStep::compute, int(j)});
    for (int i : dag.ops[j].inputs)
      if (last_use[size_t(i)] == int(j) && !keep[size_t(i)]) steps.push_back({DagStep::free, i});
    if (last_use[j] < 0 && !keep[j]) steps.push_back({DagStep::free, int(j)}); // a dead value
  }
  return evaluate_dag(dag, std::move(steps));
}

} // namespace kiln::sched
