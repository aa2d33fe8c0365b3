// Strategies that schedule a DAG under a memory budget in bytes. Every result passes
// simulate_dag() and reports its peak and time from it.
#pragma once

#include "schedules/dag.hpp"
#include "schedules/infeasible.hpp"

#include <cstdint>

namespace kiln::sched {

// Computes every op once in order and frees each output right after its last use unless it
// is an output or pinned. Takes no budget.
DagResult dag_store_all(const Dag& dag);

// Dynamic Tensor Rematerialization (Kirisame et al., ICLR 2021) simulated offline and frozen
// into a static schedule. Ops run in order; evicted inputs are recomputed first (depth-first,
// their own evicted inputs first); when memory would exceed the budget the resident,
// unpinned tensor not needed by the op in progress with the least
//   h = (compute(t) + compute of its evicted neighbourhood) / (bytes(t) * staleness(t))
// is evicted, neighbourhoods kept as union-find classes of adjacent evicted tensors (the
// paper's h_DTR^eq); tensors without future uses are freed at once (banished) and, unlike
// online DTR, may still be recomputed when a rematerialisation needs them. With a budget at
// least dag_store_all's peak it evicts nothing. Throws Infeasible when it cannot fit (an op's
// inputs and output alone exceed the budget, nothing is left to evict, or it thrashes past
// 64 n + 4096 computes); the minimum there is the least budget at which dtr succeeds
// found by bisection (DTR is not monotone in the budget, so a smaller one may exist).
DagResult dtr(const Dag& dag, int64_t budget);

} // namespace kiln::sched
