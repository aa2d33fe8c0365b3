// DAG problems (what DTR schedules) and their one memory semantics, used by every DAG
// strategy and test.
//
// Each op produces one tensor of output_bytes. Memory is the sum of the output_bytes of the
// resident ops. At the start exactly the pinned ops are resident: they are given (model
// inputs, parameters), have no inputs, are never computed and never freed.
// compute j: j is not pinned and not resident, and every input of j is resident. Peak =
//   memory + temp_bytes_j + output_bytes_j; then j is resident. Time += compute_time_j.
//   Computing an op again after freeing it (rematerialisation) is allowed.
// free j: j is resident and not pinned; releases it. Peak = memory.
// A schedule is complete when every op of `outputs` is resident at its end. Its peak is the
// max over its steps of the peak during the step (at least the pinned bytes), its time the
// sum of the compute times.
#pragma once

#include "schedules/sim_result.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::sched {

struct DagOp {
  std::string name;
  double compute_time = 0;
  int64_t output_bytes = 0;
  std::vector<int> inputs; // indices of earlier ops, no repeats
  int64_t temp_bytes = 0;  // workspace while it runs
  // Whether rematerialising strategies may evict it (gradients accumulated in place are
  // not: recomputing them would add a contribution twice). It is still freed after its
  // last use.
  bool evictable = true;
};

struct Dag {
  std::vector<DagOp> ops;   // topological order: every input precedes its consumer
  std::vector<int> outputs; // must be resident at the end (for training: the gradients)
  std::vector<int> pinned;  // given and never evicted: model inputs, parameters

  // Throws std::invalid_argument naming the op and field: bad times or sizes, inputs not
  // earlier ops or repeated, pinned ops with inputs, out-of-range indices, sizes summing
  // past 2^60.
  void validate() const;
};

struct DagStep {
  enum Kind { compute, free } kind = compute;
  int op = 0;
};

struct DagResult {
  std::vector<DagStep> steps;
  int64_t peak_bytes = 0;
  double time = 0;
};

std::string to_string(const Dag& dag, const DagStep& step); // "compute 3 (conv1)"

// Runs a schedule from the start state; validates the DAG first (throws for a bad DAG; a bad
// schedule is reported, never thrown).
SimResult simulate_dag(const Dag& dag, const std::vector<DagStep>& steps);

// Simulates a strategy's schedule and packages it; a schedule the simulator rejects is a bug
// in the strategy and throws std::logic_error.
DagResult evaluate_dag(const Dag& dag, std::vector<DagStep> steps);

} // namespace kiln::sched
