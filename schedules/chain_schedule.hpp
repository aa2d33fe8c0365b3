// Chain schedules and their one memory semantics, used by every strategy, test and the runtime.
//
// Tensors. a_i (i = 0..L) is the input of stage i+1: a_0 is the chain input (input_bytes),
// a_i the output of stage i (output_bytes). abar_i (i = 1..L) is everything stage i keeps
// for its backward when run with forward_all (saved_bytes); it contains a_i. d_i (i = 0..L-1)
// is the gradient w.r.t. a_i (d_0: input_bytes, d_i: output_bytes); there is no d_L, stage L
// owns the loss.
// State. Activation slot i holds nothing, a plain a_i, or abar_i; a_i is present when the slot
// holds either. Memory is the sum over slots (output_bytes for a plain a_i, saved_bytes for
// abar_i, never both) plus the sizes of the present d_i. At the start only a_0 is present.
// forward_none i, forward_input i: need a_{i-1} present, abar_i absent and backward i not yet
//   run. Peak = memory + forward_temp_bytes_i + output_bytes_i (the last term only if a_i is
//   absent); then a_i is present. forward_none then releases a_{i-1} if it is plain and
//   i-1 > 0; forward_input keeps it (a checkpoint).
// forward_all i: same requirements; peak = memory + forward_temp_bytes_i + saved_bytes_i; then
//   slot i holds abar_i (replacing a plain a_i); a_{i-1} is kept.
// backward i: must be the next backward (L, L-1, ..., 1, each exactly once); needs abar_i,
//   a_{i-1} and, unless i = L, d_i. Peak = memory + backward_temp_bytes_i + size(d_{i-1}); then
//   d_{i-1} is present and abar_i and d_i are released.
// free t: t must be present; releases it. free a_i needs a plain a_i (an a_i inside abar_i
//   goes with free abar_i). Freeing a_i or abar_i is an error while abar_{i+1} is present
//   (backward i+1 still needs a_i); a_0 may be freed only after backward 1. Peak = memory.
// A schedule is complete when backward 1 has run and d_0 is present at its end. Its peak is
// the max over its ops of the peak during the op (at least input_bytes), its time the sum of
// the forward and backward times of its ops.
//
// Beyond "an op's inputs must be present", the rules keep a pending backward's input a_{i-1}
// alive until backward i: no free of it, and no forward of stage i while abar_i is present
// (forward_none would release a_{i-1} the same way). Rotor's dynamic program assumes this.
#pragma once

#include "schedules/chain.hpp"
#include "schedules/sim_result.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::sched {

struct Tensor {
  enum Kind { a, abar, d } kind = a;
  int index = 0;
};

struct ChainOp {
  enum Kind { forward_none, forward_input, forward_all, backward, free } kind = forward_none;
  int stage = 0;   // 1..L, for forwards and backwards
  Tensor tensor{}; // for free
};

inline ChainOp free_op(Tensor::Kind kind, int index) { return {ChainOp::free, 0, {kind, index}}; }

std::string to_string(const Tensor& t);   // "a_3", "abar_3", "d_0"
std::string to_string(const ChainOp& op); // "forward_none 3", "backward 1", "free abar_2"

// Where an execution stands. Public so that searches (exhaustive) can enumerate states;
// only step() changes it.
struct ChainState {
  enum Activation : uint8_t { absent, plain, saved }; // slot i: nothing, a_i, abar_i
  std::vector<Activation> act;                        // slots 0..L
  std::vector<uint8_t> grad;                          // d_i present, i = 0..L-1
  int next_backward = 0;                              // L at the start, 0 once backward 1 has run
  int64_t memory = 0;                                 // bytes of the present tensors

  ChainState() = default;
  explicit ChainState(const Chain& chain); // the start: a_0 only
  bool complete() const { return next_backward == 0 && grad[0]; }
};

struct StepOutcome {
  std::string error;      // empty when the op is valid; then the state has changed
  int64_t peak_bytes = 0; // memory during the op
  double time = 0;
};

// Applies one op to a state of a validated chain. On error the state is unchanged.
StepOutcome step(const Chain& chain, ChainState& state, const ChainOp& op);

// Runs a whole schedule from the start state; validates the chain first (throws
// std::invalid_argument for a bad chain; a bad schedule is reported, never thrown).
SimResult simulate(const Chain& chain, const std::vector<ChainOp>& ops);

struct ChainResult {
  std::vector<ChainOp> ops;
  int64_t peak_bytes = 0;
  double time = 0;
};

// Simulates a strategy's schedule and packages it; a schedule the simulator rejects is a bug
// in the strategy and throws std::logic_error.
ChainResult evaluate(const Chain& chain, std::vector<ChainOp> ops);

} // namespace kiln::sched
