// Equal-segment checkpointing, as torch.utils.checkpoint.checkpoint_sequential does it.
#include "schedules/chain_strategies.hpp"

#include <limits>
#include <stdexcept>

namespace kiln::sched {

std::vector<ChainOp> sqrt_schedule(const Chain& chain, int segments) {
  const int L = chain.length();
  if (segments < 1 || segments > L)
    throw std::invalid_argument("sqrt_schedule: segments must be in 1.." + std::to_string(L) +
                                ", got " + std::to_string(segments));
  // Segment k (0-based) covers stages first[k]..first[k+1]-1; PyTorch gives the remainder
  // of L / segments to the last segment.
  const int size = L / segments;
  std::vector<int> first;
  for (int k = 0; k < segments; ++k)
    first.push_back(1 + k * size);
  first.push_back(L + 1);

  std::vector<ChainOp> ops;
  for (int k = 0; k + 1 < segments; ++k) {
    ops.push_back({ChainOp::forward_input, first[k]}); // keeps the segment input
    for (int i = first[k] + 1; i < first[k + 1]; ++i)
      ops.push_back({ChainOp::forward_none, i});
  }
  for (int i = first[segments - 1]; i <= L; ++i)
    ops.push_back({ChainOp::forward_all, i});
  for (int i = L; i >= first[segments - 1]; --i)
    ops.push_back({ChainOp::backward, i});
  for (int k = segments - 2; k >= 0; --k) {
    const int last = first[k + 1] - 1;
    // The segment's output was the next segment's input; forward_all recreates it in abar.
    ops.push_back(free_op(Tensor::a, last));
    for (int i = first[k]; i <= last; ++i)
      ops.push_back({ChainOp::forward_all, i});
    for (int i = last; i >= first[k]; --i)
      ops.push_back({ChainOp::backward, i});
  }
  return ops;
}

ChainResult sqrt_segments(const Chain& chain, int64_t budget) {
  chain.validate();
  ChainResult best;
  bool found = false;
  int64_t min_peak = std::numeric_limits<int64_t>::max();
  for (int n = 1; n <= chain.length(); ++n) {
    ChainResult r = evaluate(chain, sqrt_schedule(chain, n));
    min_peak = std::min(min_peak, r.peak_bytes);
    if (r.peak_bytes <= budget && (!found || r.time < best.time)) {
      best = std::move(r);
      found = true;
    }
  }
  if (!found)
    throw Infeasible("sqrt: no segment count fits " + std::to_string(budget) +
                         " bytes; the smallest feasible budget is " + std::to_string(min_peak) +
                         " bytes",
                     min_peak);
  return best;
}

} // namespace kiln::sched
