// Training checkpoints (kiln train): a pair of safetensors files written atomically at the end of
// every epoch.
//   W.safetensors        the parameters under their PyTorch state_dict names (what
//                        `kiln run --weights` and torch's load_state_dict read), with
//                        metadata: format kiln-checkpoint/1, model, epoch, step, run.
//   W.train.safetensors  the optimizer state (velocities, Adam's moments, by plan buffer
//                        name) with everything --resume must match to continue the run
//                        exactly: the recipe, learning rate, batch, seed, dtype, the data's
//                        digest, and the same epoch, step and run as the weights.
// Both are written to temporary names first and renamed state first, weights last; a pair
// whose epochs or runs differ (a crash between the two renames) is refused on resume.
#pragma once

#include "runtime/tensor.hpp"

#include <cstdint>
#include <map>
#include <string>

namespace kiln {

inline constexpr std::string_view kCheckpointFormat = "kiln-checkpoint/1";
inline constexpr std::string_view kTrainStateFormat = "kiln-train-state/1";

// "out/w.safetensors" -> "out/w.train.safetensors" (any other name: + ".train.safetensors").
std::string train_state_path(const std::string& weights_path);

struct Checkpoint {
  std::map<std::string, Tensor> params, state;
  // What training needs to continue (the state file's metadata; epoch, step and run agree
  // with the weights').
  std::map<std::string, std::string> meta;
  int64_t epoch = 0; // epochs completed
  int64_t step = 0;  // updates applied
};

// Writes the pair: neither file is replaced before both are written in full; only a crash
// between the two renames leaves a mixed pair, which read_checkpoint refuses. `meta` holds
// "kiln", "model" and "run" (copied into the weights' metadata) and whatever resume checks.
void write_checkpoint(const std::string& weights_path, const Checkpoint& c);

// Reads and cross-checks the pair; errors name the file at fault.
Checkpoint read_checkpoint(const std::string& weights_path);

} // namespace kiln
