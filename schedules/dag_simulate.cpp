// The memory semantics of DAG schedules (see dag.hpp), written once.
#include "schedules/dag.hpp"

#include <algorithm>
#include <stdexcept>

namespace kiln::sched {

std::string to_string(const Dag& dag, const DagStep& step) {
  std::string s = step.kind == DagStep::compute ? "compute " : "free ";
  s += std::to_string(step.op);
  if (step.op >= 0 && size_t(step.op) < dag.ops.size() && !dag.ops[size_t(step.op)].name.empty())
    s += " (" + dag.ops[size_t(step.op)].name + ")";
  return s;
}

SimResult simulate_dag(const Dag& dag, const std::vector<DagStep>& steps) {
  dag.validate();
  std::vector<char> resident(dag.ops.size(), 0), pinned(dag.ops.size(), 0);
  SimResult r;
  int64_t memory = 0;
  for (int j : dag.pinned)
    if (!pinned[size_t(j)]) {
      pinned[size_t(j)] = resident[size_t(j)] = 1;
      memory += dag.ops[size_t(j)].output_bytes;
    }
  r.peak_bytes = memory;
  auto fail = [&](size_t k, const std::string& why) {
    r.error = "step " + std::to_string(k) + " (" + to_string(dag, steps[k]) + "): " + why;
    return r;
  };
  for (size_t k = 0; k < steps.size(); ++k) {
    const int j = steps[k].op;
    if (j < 0 || size_t(j) >= dag.ops.size()) return fail(k, "no such op");
    const DagOp& op = dag.ops[size_t(j)];
    if (pinned[size_t(j)]) return fail(k, "op is pinned (given, never computed or freed)");
    if (steps[k].kind == DagStep::free) {
      if (!resident[size_t(j)]) return fail(k, "op is not resident");
      r.peak_bytes = std::max(r.peak_bytes, memory);
      resident[size_t(j)] = 0;
      memory -= op.output_bytes;
      continue;
    }
    if (steps[k].kind != DagStep::compute) return fail(k, "unknown step kind");
    if (resident[size_t(j)]) return fail(k, "op is already resident");
    for (int i : op.inputs)
      if (!resident[size_t(i)])
        return fail(k, "input " + std::to_string(i) + " (" + dag.ops[size_t(i)].name +
                           ") is not resident");
    r.peak_bytes = std::max(r.peak_bytes, memory + op.temp_bytes + op.output_bytes);
    r.time += op.compute_time;
    resident[size_t(j)] = 1;
    memory += op.output_bytes;
  }
  for (int j : dag.outputs)
    if (!resident[size_t(j)]) {
      r.error = "incomplete schedule: output " + std::to_string(j) + " (" +
                dag.ops[size_t(j)].name + ") is not resident at the end";
      return r;
    }
  r.ok = true;
  return r;
}

DagResult evaluate_dag(const Dag& dag, std::vector<DagStep> steps) {
  const SimResult sim = simulate_dag(dag, steps);
  if (!sim.ok) throw std::logic_error("dag schedule rejected by the simulator: " + sim.error);
  return {std::move(steps), sim.peak_bytes, sim.time};
}

} // namespace kiln::sched
