// Store-all: every stage saves what its backward needs, so nothing is recomputed.
#include "schedules/chain_strategies.hpp"

namespace kiln::sched {

ChainResult store_all(const Chain& chain) {
  chain.validate();
  std::vector<ChainOp> ops;
  for (int i = 1; i <= chain.length(); ++i)
    ops.push_back({ChainOp::forward_all, i});
  for (int i = chain.length(); i >= 1; --i)
    ops.push_back({ChainOp::backward, i});
  return evaluate(chain, std::move(ops));
}

} // namespace kiln::sched
