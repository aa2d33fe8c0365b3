// A chain problem (DESIGN.md 4.3, `kiln-chain/1`): stages 1..L run one after another; what
// rotor, sqrt and store-all schedule. Sizes are bytes, times any consistent unit.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::sched {

struct Stage {
  std::string name;
  double forward_time = 0, backward_time = 0;
  int64_t output_bytes = 0;        // a_i, the activation passed to the next stage
  int64_t saved_bytes = 0;         // abar_i: all stage i keeps for its backward, a_i included
  int64_t forward_temp_bytes = 0;  // workspace while the forward runs
  int64_t backward_temp_bytes = 0; // workspace while the backward runs
};

struct Chain {
  int64_t input_bytes = 0;   // a_0 (and d_0)
  std::vector<Stage> stages; // stage i (1-based) is stages[i - 1]

  int length() const { return int(stages.size()); }
  const Stage& stage(int i) const { return stages[size_t(i - 1)]; }
  // Size of a_i: input_bytes for i = 0, else output_bytes of stage i.
  int64_t activation_bytes(int i) const { return i == 0 ? input_bytes : stage(i).output_bytes; }
  // Size of d_i (the gradient w.r.t. a_i); d_L never exists (stage L owns the loss): 0.
  int64_t gradient_bytes(int i) const { return i == length() ? 0 : activation_bytes(i); }

  // Throws std::invalid_argument naming the stage and field: no stages, negative or
  // non-finite values, saved_bytes < output_bytes, sizes whose sum could overflow.
  void validate() const;
};

// Every size of a valid chain sums below this, so memory arithmetic never overflows.
inline constexpr int64_t kMaxTotalBytes = int64_t(1) << 60;

} // namespace kiln::sched
