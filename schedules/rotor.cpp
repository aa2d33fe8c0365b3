// Optimal checkpointing for heterogeneous chains (Beaumont, Eyraud-Dubois, Herrmann, Joly,
// Shilova, hal-02352969), on the semantics of chain_schedule.hpp.
//
// Subproblem P(s, t): differentiate stages s..t. a_{s-1} is present and belongs to the caller
// (outside the subproblem's memory m); d_t is present inside m (there is no d_L). It ends with
// d_{s-1} present inside m, d_t consumed and nothing else of stages s..t left. Either
//   store:        forward_all s, solve P(s+1, t) in m - saved_s, backward s; or
//   checkpoint j: forward_input s, forward_none s+1..j-1, solve P(j, t) in m - out_{j-1}
//                 while a_{j-1} is held, free a_{j-1}, solve P(s, j-1) in m.
// R(s, t) is the least memory any such schedule needs; C(s, t, m) the least time in m slots.
// The first op of P(s, t) must be a forward of stage s, and a backward's inputs live until it
// runs, so these two choices cover every persistent schedule (one that keeps each checkpoint
// until the backward needing it; see ExhaustiveScope): the program is optimal among those.
#include "schedules/chain_strategies.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>

namespace kiln::sched {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr int64_t kMaxTableEntries = int64_t(1) << 26;

int64_t ceil_div(int64_t x, int64_t y) { return x / y + (x % y != 0); } // x >= 0, y > 0

// The chain in slots (sizes rounded up), 1-based; grad[i] is d_i (grad[L] = 0).
struct SlotChain {
  int L = 0;
  int64_t input = 0;
  std::vector<int64_t> out, saved, ftmp, btmp, grad;
  std::vector<double> f, b;
};

SlotChain to_slots(const Chain& chain, int64_t slot) {
  SlotChain c;
  c.L = chain.length();
  c.input = ceil_div(chain.input_bytes, slot);
  const size_t n = size_t(c.L + 1);
  c.out.assign(n, c.input);
  c.saved = c.ftmp = c.btmp = c.grad = std::vector<int64_t>(n, 0);
  c.f = c.b = std::vector<double>(n, 0);
  for (int i = 1; i <= c.L; ++i) {
    const Stage& st = chain.stage(i);
    c.out[i] = ceil_div(st.output_bytes, slot);
    c.saved[i] = ceil_div(st.saved_bytes, slot);
    c.ftmp[i] = ceil_div(st.forward_temp_bytes, slot);
    c.btmp[i] = ceil_div(st.backward_temp_bytes, slot);
    c.f[i] = st.forward_time;
    c.b[i] = st.backward_time;
  }
  for (int i = 0; i < c.L; ++i)
    c.grad[i] = c.out[i];
  return c;
}

// Memory of the store option's own ops: forward_all s beside d_t, backward s.
int64_t store_need(const SlotChain& c, int s, int t) {
  return std::max(c.grad[t] + c.ftmp[s] + c.saved[s],
                  c.saved[s] + c.grad[s] + c.btmp[s] + c.grad[s - 1]);
}

// Memory of forward k in a checkpoint run starting at s (a_{s-1} is the caller's), without d_t.
int64_t run_need(const SlotChain& c, int s, int k) {
  return (k > s ? c.out[k - 1] : 0) + c.ftmp[k] + c.out[k];
}

// Dense index of the pairs 1 <= s <= t <= L.
struct Pairs {
  explicit Pairs(int L) : L(L), first(size_t(L + 2), 0) {
    for (int s = 1; s <= L; ++s)
      first[s + 1] = first[s] + (L - s + 1);
  }
  int64_t operator()(int s, int t) const { return first[s] + (t - s); }
  int64_t size() const { return first[L + 1]; }
  int L;
  std::vector<int64_t> first;
};

std::vector<int64_t> min_memory(const SlotChain& c, const Pairs& at) {
  std::vector<int64_t> R(size_t(at.size()));
  for (int len = 0; len < c.L; ++len)
    for (int s = 1; s + len <= c.L; ++s) {
      const int t = s + len;
      int64_t best = store_need(c, s, t);
      if (s < t) best = std::max(best, c.saved[s] + R[at(s + 1, t)]);
      int64_t run = 0;
      for (int j = s + 1; j <= t; ++j) {
        run = std::max(run, run_need(c, s, j - 1));
        best = std::min(best,
                        std::max({c.grad[t] + run, c.out[j - 1] + R[at(j, t)], R[at(s, j - 1)]}));
      }
      R[at(s, t)] = best;
    }
  return R;
}

struct Table {
  int64_t M = 0;
  std::vector<double> cost;    // C(s, t, m) at pair * (M + 1) + m; infinite below R(s, t)
  std::vector<int32_t> choice; // 0: store, j > 0: checkpoint j
};

// Fills C by increasing t - s. Each option is one pass over m whose lower bound comes from
// R, so every value read is finite and the inner loops carry no feasibility tests.
Table solve(const SlotChain& c, const Pairs& at, const std::vector<int64_t>& R, int64_t M) {
  Table T;
  T.M = M;
  const int64_t W = M + 1;
  T.cost.assign(size_t(at.size() * W), kInf);
  T.choice.assign(size_t(at.size() * W), -1);
  for (int len = 0; len < c.L; ++len)
    for (int s = 1; s + len <= c.L; ++s) {
      const int t = s + len;
      double* __restrict row = &T.cost[at(s, t) * W];
      int32_t* __restrict ch = &T.choice[at(s, t) * W];
      const double fb = c.f[s] + c.b[s];
      int64_t lo = store_need(c, s, t);
      if (s == t) {
        for (int64_t m = lo; m <= M; ++m)
          row[m] = fb, ch[m] = 0;
        continue;
      }
      lo = std::max(lo, c.saved[s] + R[at(s + 1, t)]);
      // Offsets rather than shifted pointers, which could point before the array.
      const double* __restrict cost = T.cost.data();
      const int64_t sub = at(s + 1, t) * W - c.saved[s];
      for (int64_t m = lo; m <= M; ++m)
        row[m] = fb + cost[sub + m], ch[m] = 0;
      int64_t run = 0;
      double F = 0;
      for (int j = s + 1; j <= t; ++j) {
        run = std::max(run, run_need(c, s, j - 1));
        F += c.f[j - 1];
        const int64_t o = c.out[j - 1];
        const int64_t from = std::max({c.grad[t] + run, o + R[at(j, t)], R[at(s, j - 1)]});
        const int64_t later = at(j, t) * W - o, earlier = at(s, j - 1) * W;
        for (int64_t m = from; m <= M; ++m) {
          const double v = F + cost[later + m] + cost[earlier + m];
          if (v < row[m]) row[m] = v, ch[m] = j;
        }
      }
    }
  return T;
}

struct Emitter {
  const SlotChain& c;
  const Pairs& at;
  const Table& T;
  std::vector<ChainOp> ops;

  void emit(int s, int t, int64_t m) {
    const int32_t j = T.choice[size_t(at(s, t) * (T.M + 1) + m)];
    if (j < 0) throw std::logic_error("rotor: reconstruction reached an infeasible entry");
    if (j == 0) {
      ops.push_back({ChainOp::forward_all, s});
      if (s < t) emit(s + 1, t, m - c.saved[s]);
      ops.push_back({ChainOp::backward, s});
      return;
    }
    ops.push_back({ChainOp::forward_input, s});
    for (int k = s + 1; k < j; ++k)
      ops.push_back({ChainOp::forward_none, k});
    emit(j, t, m - c.out[j - 1]);
    ops.push_back(free_op(Tensor::a, j - 1));
    emit(s, j - 1, m);
  }
};

int64_t slot_size(int64_t budget, int slots) {
  return std::max<int64_t>(1, ceil_div(budget, slots));
}

// The whole program at one budget; nullopt when nothing fits.
std::optional<ChainResult> attempt(const Chain& chain, int64_t budget, int slots) {
  const SlotChain c = to_slots(chain, slot_size(budget, slots));
  const Pairs at(c.L);
  const std::vector<int64_t> R = min_memory(c, at);
  const int64_t M = budget / slot_size(budget, slots) - c.input;
  if (M < R[at(1, c.L)]) return std::nullopt;
  const Table T = solve(c, at, R, M);
  Emitter e{c, at, T, {}};
  e.emit(1, c.L, M);
  ChainResult r = evaluate(chain, std::move(e.ops));
  const double predicted = T.cost[size_t(at(1, c.L) * (M + 1) + M)];
  if (r.peak_bytes > budget || std::abs(r.time - predicted) > 1e-9 * std::max(1.0, predicted))
    throw std::logic_error("rotor: the simulator disagrees with the dynamic program");
  return r;
}

// Slots the chain needs at slot size S, a_0 included; never increases with S.
int64_t needed_slots(const Chain& chain, int64_t S) {
  const SlotChain c = to_slots(chain, S);
  const Pairs at(c.L);
  return c.input + min_memory(c, at)[at(1, c.L)];
}

// The smallest budget B at which attempt() succeeds: for slot size S = ceil(B / slots) it
// needs floor(B / S) >= needed_slots(S). Since needed_slots never increases with S, the first
// S where it is <= slots is found by bisection, and the least B with that slot size wins.
int64_t min_feasible_budget(const Chain& chain, int slots) {
  int64_t S_max = std::max<int64_t>(1, chain.input_bytes);
  for (const Stage& st : chain.stages)
    S_max = std::max({S_max, st.saved_bytes, st.forward_temp_bytes, st.backward_temp_bytes});
  const int64_t most = needed_slots(chain, S_max); // every nonzero size is one slot here
  if (most > slots)
    throw std::invalid_argument("rotor: this chain needs at least " + std::to_string(most) +
                                " slots at any slot size; got " + std::to_string(slots));
  int64_t lo = 1, hi = S_max;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (needed_slots(chain, mid) <= slots)
      hi = mid;
    else
      lo = mid + 1;
  }
  const __int128 S = lo, from_slots = __int128(needed_slots(chain, lo)) * S;
  const __int128 B = std::max(from_slots, S == 1 ? __int128(0) : (S - 1) * slots + 1);
  if (B > std::numeric_limits<int64_t>::max())
    throw std::invalid_argument("rotor: the smallest feasible budget overflows 64 bits");
  return int64_t(B);
}

} // namespace

ChainResult rotor(const Chain& chain, int64_t budget, int slots) {
  chain.validate();
  if (slots < 1 || slots > 1000000)
    throw std::invalid_argument("rotor: slots must be in 1..10^6, got " + std::to_string(slots));
  if (budget < 0) throw std::invalid_argument("rotor: negative budget " + std::to_string(budget));
  const int64_t entries = Pairs(chain.length()).size() * (int64_t(slots) + 1);
  if (entries > kMaxTableEntries)
    throw std::invalid_argument("rotor: " + std::to_string(chain.length()) + " stages at " +
                                std::to_string(slots) + " slots need a table of " +
                                std::to_string(entries) + " entries (limit 2^26); use fewer slots");
  if (auto r = attempt(chain, budget, slots)) return std::move(*r);
  // Rounding to a coarser slot can fail where a smaller budget (finer slots) fits; a budget
  // at or above the smallest feasible one always gets that one's schedule.
  const int64_t least = min_feasible_budget(chain, slots);
  if (least <= budget) {
    if (auto r = attempt(chain, least, slots)) return std::move(*r);
    throw std::logic_error("rotor: the smallest feasible budget is not feasible");
  }
  throw Infeasible("rotor: no schedule fits " + std::to_string(budget) + " bytes with " +
                       std::to_string(slots) + " slots; the smallest feasible budget is " +
                       std::to_string(least) + " bytes",
                   least);
}

} // namespace kiln::sched
