#include "generator/cli/device_args.hpp"

namespace kiln::cli {

void DeviceArgs::add_to(CLI::App* cmd) {
  cmd->add_option(
         "--device", device,
         "backend: cpu (the reference), emu (the generated kernels on the CPU emulator), gpu")
      ->check(CLI::IsMember({"cpu", "emu", "gpu"}));
  cmd->add_option("--weights", weights,
                  "parameters by name (.safetensors, PyTorch state_dict names); default: an ONNX "
                  "model's own initializers, else seeded");
  cmd->add_option("--seed", seed, "seed for the weights when no --weights are given (default 0)");
  cmd->add_option("--input", input,
                  "input batch, .npy [N, C, H, W] ([N, C, L] for a 1-D signal model)")
      ->required();
}

} // namespace kiln::cli
