// The oracle: a shortest-path search over every execution state simulate() can reach.
// Ops are edges (their peak must fit the budget), times are weights, and a complete state
// is the goal. A second search with "max of peaks" as the path cost finds the smallest
// budget any schedule meets. In persistent scope the state also records which plain
// activations are checkpoints (kept as the input of a forward_input or forward_all), and ops
// that would drop a checkpoint or an abar before their backward are not taken.
#include "schedules/chain_strategies.hpp"

#include <algorithm>
#include <limits>
#include <queue>
#include <stdexcept>
#include <type_traits>
#include <unordered_map>
#include <utility>

namespace kiln::sched {

namespace {

constexpr int kMaxStages = 8;

// Execution state plus, in persistent scope, the checkpoint flags of plain activations.
struct State {
  ChainState chain;
  std::vector<uint8_t> checkpoint; // slots 0..L
};

uint64_t encode(const State& st) {
  const ChainState& s = st.chain;
  uint64_t key = 0;
  for (size_t i = 0; i < s.act.size(); ++i)
    key = key * 4 + (st.checkpoint[i] ? 3 : s.act[i]);
  for (uint8_t g : s.grad)
    key = key * 2 + g;
  return key * (kMaxStages + 1) + uint64_t(s.next_backward);
}

std::vector<ChainOp> candidate_ops(int L) {
  std::vector<ChainOp> ops;
  for (int i = 1; i <= L; ++i) {
    ops.push_back({ChainOp::forward_none, i});
    ops.push_back({ChainOp::forward_input, i});
    ops.push_back({ChainOp::forward_all, i});
    ops.push_back({ChainOp::backward, i});
    ops.push_back(free_op(Tensor::abar, i));
  }
  for (int i = 0; i <= L; ++i)
    ops.push_back(free_op(Tensor::a, i));
  for (int i = 0; i < L; ++i)
    ops.push_back(free_op(Tensor::d, i));
  return ops;
}

// A path's cost: (time, peak) compared in that order, or (peak, time) when minimising the
// peak. Both orders are kept by extending paths, so Dijkstra's first complete state is best
// in the first component.
template <bool ByPeak>
using Key = std::conditional_t<ByPeak, std::pair<int64_t, double>, std::pair<double, int64_t>>;

template <bool ByPeak> Key<ByPeak> extend(const Key<ByPeak>& k, const StepOutcome& o) {
  if constexpr (ByPeak)
    return {std::max(k.first, o.peak_bytes), k.second + o.time};
  else
    return {k.first + o.time, std::max(k.second, o.peak_bytes)};
}

// Whether a persistent schedule may take `op` (before it runs); updates the flags after it.
bool persistent_allows(const State& st, const ChainOp& op) {
  const int i = op.kind == ChainOp::free ? op.tensor.index : op.stage;
  switch (op.kind) {
  case ChainOp::forward_none: return !st.checkpoint[size_t(i - 1)];
  case ChainOp::free:
    if (op.tensor.kind == Tensor::abar) return false; // only backward i drops abar_i
    return op.tensor.kind != Tensor::a || !st.checkpoint[size_t(i)] || st.chain.next_backward <= i;
  default: return true;
  }
}

void update_checkpoints(State& st, const ChainOp& op) {
  if ((op.kind == ChainOp::forward_input || op.kind == ChainOp::forward_all) && op.stage > 1 &&
      st.chain.act[size_t(op.stage - 1)] == ChainState::plain)
    st.checkpoint[size_t(op.stage - 1)] = 1;
  for (size_t i = 0; i < st.checkpoint.size(); ++i)
    if (st.chain.act[i] != ChainState::plain) st.checkpoint[i] = 0;
}

template <bool ByPeak> struct Node {
  State state;
  Key<ByPeak> key;
  int parent = -1;
  ChainOp via{};
  bool done = false;
};

// The best complete schedule whose ops all fit the budget (ignored when ByPeak), into `out`;
// false when there is none.
template <bool ByPeak>
bool search(const Chain& chain, int64_t budget, ExhaustiveScope scope, std::vector<ChainOp>& out) {
  const bool persistent = scope == ExhaustiveScope::persistent;
  const std::vector<ChainOp> ops = candidate_ops(chain.length());
  std::vector<Node<ByPeak>> nodes;
  std::unordered_map<uint64_t, int> index;
  using Item = std::pair<Key<ByPeak>, int>;
  std::priority_queue<Item, std::vector<Item>, std::greater<>> queue;

  State start{ChainState(chain), std::vector<uint8_t>(size_t(chain.length() + 1), 0)};
  if (!ByPeak && start.chain.memory > budget) return false;
  Key<ByPeak> k0{};
  if constexpr (ByPeak)
    k0.first = start.chain.memory;
  else
    k0.second = start.chain.memory;
  nodes.push_back({start, k0});
  index.emplace(encode(start), 0);
  queue.push({k0, 0});
  while (!queue.empty()) {
    const auto [key, n] = queue.top();
    queue.pop();
    if (nodes[size_t(n)].done || nodes[size_t(n)].key < key) continue;
    nodes[size_t(n)].done = true;
    if (nodes[size_t(n)].state.chain.complete()) {
      out.clear();
      for (int k = n; nodes[size_t(k)].parent >= 0; k = nodes[size_t(k)].parent)
        out.push_back(nodes[size_t(k)].via);
      std::reverse(out.begin(), out.end());
      return true;
    }
    for (const ChainOp& op : ops) {
      if (persistent && !persistent_allows(nodes[size_t(n)].state, op)) continue;
      State next = nodes[size_t(n)].state;
      const StepOutcome o = step(chain, next.chain, op);
      if (!o.error.empty() || (!ByPeak && o.peak_bytes > budget)) continue;
      if (persistent) update_checkpoints(next, op);
      const Key<ByPeak> c = extend<ByPeak>(key, o);
      const auto [it, fresh] = index.emplace(encode(next), int(nodes.size()));
      if (fresh) {
        nodes.push_back({std::move(next), c, n, op});
      } else {
        Node<ByPeak>& m = nodes[size_t(it->second)];
        if (m.done || !(c < m.key)) continue;
        m.key = c, m.parent = n, m.via = op;
      }
      queue.push({c, it->second});
    }
  }
  return false;
}

} // namespace

ChainResult exhaustive(const Chain& chain, int64_t budget, ExhaustiveScope scope) {
  chain.validate();
  if (chain.length() > kMaxStages)
    throw std::invalid_argument("exhaustive: at most " + std::to_string(kMaxStages) +
                                " stages, got " + std::to_string(chain.length()));
  std::vector<ChainOp> ops;
  if (search<false>(chain, budget, scope, ops)) return evaluate(chain, std::move(ops));
  if (!search<true>(chain, budget, scope, ops))
    throw std::logic_error("exhaustive: no complete schedule at any budget");
  const int64_t least = evaluate(chain, ops).peak_bytes;
  throw Infeasible("exhaustive: no schedule fits " + std::to_string(budget) +
                       " bytes; the smallest feasible budget is " + std::to_string(least) +
                       " bytes",
                   least);
}

} // namespace kiln::sched
