// The training DAG of a chain, so DAG strategies (DTR) can be compared with chain ones.
#pragma once

#include "schedules/chain.hpp"
#include "schedules/dag.hpp"

namespace kiln::sched {

// Ops: "a0" (pinned, input_bytes); per stage i, "F<i>" (consumes a_{i-1}, produces a_i:
// forward_time, output_bytes, forward_temp_bytes) and, when saved_bytes > output_bytes,
// "S<i>" (consumes a_{i-1}, produces the rest of abar_i: saved - output bytes, again
// forward_time, since regenerating what a stage saves means running it); then for i = L..1
// "B<i>" (consumes a_{i-1}, a_i, S<i> and d_i except for i = L; produces d_{i-1}: backward_time,
// backward_temp_bytes). The output is B1 (d_0). The DAG is a looser model of the stage: an
// op has one output, so saving everything costs two forward_times where forward_all costs
// one; and when saved_bytes == output_bytes a plain a_i serves the backward, where the chain
// semantics want abar_i from a forward_all.
Dag chain_to_dag(const Chain& chain);

} // namespace kiln::sched
