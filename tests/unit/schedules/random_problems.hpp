// Random chains and DAGs for the schedule tests and benchmark, from a fixed seed.
#pragma once

#include "schedules/chain.hpp"
#include "schedules/dag.hpp"
#include "tests/unit/rng.hpp"

#include <algorithm>

#include <cstdint>
#include <string>

namespace kiln::sched::testing {

// L stages; every size a multiple of `unit` (at most max_units units); integer times, so sums
// are exact in any order.
inline Chain random_chain(Rng& rng, int L, int64_t unit = 1, int64_t max_units = 8) {
  Chain c;
  c.input_bytes = unit * rng.uniform(1, max_units);
  for (int i = 1; i <= L; ++i) {
    Stage s;
    s.name = "s" + std::to_string(i);
    s.forward_time = double(rng.uniform(1, 10));
    s.backward_time = double(rng.uniform(1, 20));
    s.output_bytes = unit * rng.uniform(1, max_units);
    s.saved_bytes = s.output_bytes + unit * rng.uniform(0, max_units);
    s.forward_temp_bytes = unit * rng.uniform(0, max_units / 2);
    s.backward_temp_bytes = unit * rng.uniform(0, max_units / 2);
    c.stages.push_back(s);
  }
  return c;
}

// n ops, the first `sources` pinned (inputs, parameters); each other op reads 1..3 earlier
// ops, mostly recent ones (as networks do) and sometimes any; the last op and a few random
// ones are outputs.
inline Dag random_dag(Rng& rng, int n, int sources = 2, int64_t max_bytes = 100) {
  Dag g;
  for (int j = 0; j < n; ++j) {
    DagOp op;
    op.name = "op" + std::to_string(j);
    op.output_bytes = rng.uniform(1, max_bytes);
    if (j < sources) {
      g.pinned.push_back(j);
      g.ops.push_back(op);
      continue;
    }
    op.compute_time = double(rng.uniform(1, 10));
    op.temp_bytes = rng.uniform(0, max_bytes / 4);
    const int k = int(rng.uniform(1, 3));
    for (int a = 0; a < k; ++a) {
      const int i = rng.uniform(0, 3) == 0 ? int(rng.uniform(0, j - 1))
                                           : std::max(0, j - 1 - int(rng.uniform(0, 4)));
      if (std::find(op.inputs.begin(), op.inputs.end(), i) == op.inputs.end())
        op.inputs.push_back(i);
    }
    g.ops.push_back(op);
  }
  g.outputs.push_back(n - 1);
  for (int a = 0; a < 2; ++a) {
    const int j = int(rng.uniform(sources, n - 1));
    if (std::find(g.outputs.begin(), g.outputs.end(), j) == g.outputs.end()) g.outputs.push_back(j);
  }
  return g;
}

// The training graph of a random network of L layers: layer k reads layer k-1 and sometimes
// an earlier layer (skip connections) and a pinned parameter; the gradient op of layer k
// reads the gradients of k's consumers and the forward values k's backward needs (its inputs
// and output). The output is the gradient of layer 1.
inline Dag random_training_dag(Rng& rng, int L, int64_t max_bytes = 100) {
  Dag g;
  g.ops.push_back({"x", 0, rng.uniform(1, max_bytes), {}});
  g.ops.push_back({"w", 0, rng.uniform(1, max_bytes), {}});
  g.pinned = {0, 1};
  std::vector<int> layer{0};
  std::vector<std::vector<int>> consumers(size_t(L + 1));
  for (int k = 1; k <= L; ++k) {
    DagOp op{"f" + std::to_string(k),
             double(rng.uniform(1, 10)),
             rng.uniform(1, max_bytes),
             {layer[size_t(k - 1)], 1},
             rng.uniform(0, max_bytes / 4)};
    consumers[size_t(k - 1)].push_back(k);
    if (k > 2 && rng.uniform(0, 2) == 0) {
      const int from = int(rng.uniform(std::max(1, k - 8), k - 2));
      op.inputs.push_back(layer[size_t(from)]);
      consumers[size_t(from)].push_back(k);
    }
    layer.push_back(int(g.ops.size()));
    g.ops.push_back(op);
  }
  std::vector<int> grad(size_t(L + 1), -1);
  for (int k = L; k >= 1; --k) {
    const DagOp& f = g.ops[size_t(layer[size_t(k)])];
    DagOp op{"g" + std::to_string(k),
             2 * f.compute_time,
             f.output_bytes,
             {layer[size_t(k)]},
             f.temp_bytes};
    for (int i : f.inputs)
      if (i != 1 && i != layer[size_t(k)]) op.inputs.push_back(i);
    for (int c : consumers[size_t(k)])
      op.inputs.push_back(grad[size_t(c)]);
    grad[size_t(k)] = int(g.ops.size());
    g.ops.push_back(op);
  }
  g.outputs = {grad[1]};
  return g;
}

} // namespace kiln::sched::testing
