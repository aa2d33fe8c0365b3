// The options of the commands that run a model once (kiln run, kiln profile): the backend,
// the weights and the input batch.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

namespace kiln::cli {

struct DeviceArgs {
  std::string device = "cpu";
  std::string weights; // empty: an ONNX model's own, else seeded
  uint64_t seed = 0;
  std::string input;

  // --device, --weights, --seed and --input (required), in that order.
  void add_to(CLI::App* cmd);
};

} // namespace kiln::cli
