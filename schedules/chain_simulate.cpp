// The memory semantics of chain schedules (see chain_schedule.hpp), written once.
#include "schedules/chain_schedule.hpp"

#include <algorithm>
#include <stdexcept>

namespace kiln::sched {

std::string to_string(const Tensor& t) {
  const char* kind = t.kind == Tensor::a ? "a_" : t.kind == Tensor::abar ? "abar_" : "d_";
  return kind + std::to_string(t.index);
}

std::string to_string(const ChainOp& op) {
  switch (op.kind) {
  case ChainOp::forward_none: return "forward_none " + std::to_string(op.stage);
  case ChainOp::forward_input: return "forward_input " + std::to_string(op.stage);
  case ChainOp::forward_all: return "forward_all " + std::to_string(op.stage);
  case ChainOp::backward: return "backward " + std::to_string(op.stage);
  case ChainOp::free: return "free " + to_string(op.tensor);
  }
  return "unknown op kind " + std::to_string(int(op.kind));
}

ChainState::ChainState(const Chain& chain)
    : act(size_t(chain.length() + 1), absent), grad(size_t(chain.length()), 0),
      next_backward(chain.length()), memory(chain.input_bytes) {
  act[0] = plain;
}

namespace {

std::string a_name(int i) { return "a_" + std::to_string(i); }

int64_t slot_bytes(const Chain& chain, const ChainState& s, int i) {
  if (s.act[size_t(i)] == ChainState::absent) return 0;
  return s.act[size_t(i)] == ChainState::plain ? chain.activation_bytes(i)
                                               : chain.stage(i).saved_bytes;
}

StepOutcome forward(const Chain& chain, ChainState& s, const ChainOp& op) {
  const int i = op.stage, L = chain.length();
  if (i < 1 || i > L)
    return {"no stage " + std::to_string(i) + " (stages are 1.." + std::to_string(L) + ")"};
  if (i > s.next_backward)
    return {"stage " + std::to_string(i) + " is forwarded after its backward ran"};
  if (s.act[size_t(i)] == ChainState::saved)
    return {"abar_" + std::to_string(i) + " is already present"};
  if (s.act[size_t(i - 1)] == ChainState::absent) return {"input " + a_name(i - 1) + " absent"};
  const Stage& st = chain.stage(i);
  StepOutcome out;
  out.time = st.forward_time;
  if (op.kind == ChainOp::forward_all) {
    out.peak_bytes = s.memory + st.forward_temp_bytes + st.saved_bytes;
    s.memory += st.saved_bytes - slot_bytes(chain, s, i);
    s.act[size_t(i)] = ChainState::saved;
    return out;
  }
  const bool had_output = s.act[size_t(i)] != ChainState::absent;
  out.peak_bytes = s.memory + st.forward_temp_bytes + (had_output ? 0 : st.output_bytes);
  if (!had_output) {
    s.memory += st.output_bytes;
    s.act[size_t(i)] = ChainState::plain;
  }
  if (op.kind == ChainOp::forward_none && i - 1 > 0 && s.act[size_t(i - 1)] == ChainState::plain) {
    s.memory -= chain.activation_bytes(i - 1);
    s.act[size_t(i - 1)] = ChainState::absent;
  }
  return out;
}

StepOutcome backward(const Chain& chain, ChainState& s, const ChainOp& op) {
  const int i = op.stage, L = chain.length();
  if (i < 1 || i > L)
    return {"no stage " + std::to_string(i) + " (stages are 1.." + std::to_string(L) + ")"};
  if (i > s.next_backward) return {"backward " + std::to_string(i) + " already ran"};
  if (i < s.next_backward)
    return {"backward out of order: backward " + std::to_string(s.next_backward) +
            " must run first"};
  if (s.act[size_t(i)] != ChainState::saved)
    return {"abar_" + std::to_string(i) + " absent (run forward_all " + std::to_string(i) +
            " first)"};
  if (s.act[size_t(i - 1)] == ChainState::absent) return {"input " + a_name(i - 1) + " absent"};
  if (i < L && !s.grad[size_t(i)]) return {"gradient d_" + std::to_string(i) + " absent"};
  const Stage& st = chain.stage(i);
  StepOutcome out;
  out.time = st.backward_time;
  out.peak_bytes = s.memory + st.backward_temp_bytes + chain.gradient_bytes(i - 1);
  s.memory += chain.gradient_bytes(i - 1) - st.saved_bytes - chain.gradient_bytes(i);
  s.act[size_t(i)] = ChainState::absent;
  if (i < L) s.grad[size_t(i)] = 0;
  s.grad[size_t(i - 1)] = 1;
  s.next_backward = i - 1;
  return out;
}

StepOutcome release(const Chain& chain, ChainState& s, const Tensor& t) {
  const int i = t.index, L = chain.length();
  const std::string name = to_string(t);
  StepOutcome out;
  out.peak_bytes = s.memory;
  switch (t.kind) {
  case Tensor::a:
    if (i < 0 || i > L) return {"no tensor " + name};
    if (s.act[size_t(i)] == ChainState::absent) return {name + " is not present"};
    if (s.act[size_t(i)] == ChainState::saved)
      return {name + " is part of abar_" + std::to_string(i) + "; free abar_" + std::to_string(i) +
              " instead"};
    if (i == 0 && s.next_backward > 0) return {"a_0 can be freed only after backward 1"};
    if (i < L && s.act[size_t(i + 1)] == ChainState::saved)
      return {name + " is still needed by backward " + std::to_string(i + 1)};
    s.memory -= chain.activation_bytes(i);
    s.act[size_t(i)] = ChainState::absent;
    return out;
  case Tensor::abar:
    if (i < 1 || i > L) return {"no tensor " + name};
    if (s.act[size_t(i)] != ChainState::saved) return {name + " is not present"};
    if (i < L && s.act[size_t(i + 1)] == ChainState::saved)
      return {name + " holds a_" + std::to_string(i) + ", still needed by backward " +
              std::to_string(i + 1)};
    s.memory -= chain.stage(i).saved_bytes;
    s.act[size_t(i)] = ChainState::absent;
    return out;
  case Tensor::d:
    if (i < 0 || i >= L) return {"no tensor " + name};
    if (!s.grad[size_t(i)]) return {name + " is not present"};
    s.memory -= chain.gradient_bytes(i);
    s.grad[size_t(i)] = 0;
    return out;
  }
  return {"unknown tensor kind " + std::to_string(int(t.kind))};
}

} // namespace

StepOutcome step(const Chain& chain, ChainState& state, const ChainOp& op) {
  switch (op.kind) {
  case ChainOp::forward_none:
  case ChainOp::forward_input:
  case ChainOp::forward_all: return forward(chain, state, op);
  case ChainOp::backward: return backward(chain, state, op);
  case ChainOp::free: return release(chain, state, op.tensor);
  }
  return {"unknown op kind " + std::to_string(int(op.kind))};
}

SimResult simulate(const Chain& chain, const std::vector<ChainOp>& ops) {
  chain.validate();
  ChainState state(chain);
  SimResult r;
  r.peak_bytes = state.memory;
  for (size_t k = 0; k < ops.size(); ++k) {
    StepOutcome o = step(chain, state, ops[k]);
    if (!o.error.empty()) {
      r.error = "op " + std::to_string(k) + " (" + to_string(ops[k]) + "): " + o.error;
      return r;
    }
    r.peak_bytes = std::max(r.peak_bytes, o.peak_bytes);
    r.time += o.time;
  }
  if (state.next_backward > 0) {
    r.error = "incomplete schedule: backward " + std::to_string(state.next_backward) + " never ran";
    return r;
  }
  if (!state.complete()) {
    r.error = "incomplete schedule: d_0 is not present at the end";
    return r;
  }
  r.ok = true;
  return r;
}

ChainResult evaluate(const Chain& chain, std::vector<ChainOp> ops) {
  const SimResult sim = simulate(chain, ops);
  if (!sim.ok) throw std::logic_error("schedule rejected by the simulator: " + sim.error);
  return {std::move(ops), sim.peak_bytes, sim.time};
}

} // namespace kiln::sched
