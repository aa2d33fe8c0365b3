// The emu backend: the generated kernels, compiled by the host compiler into one shared
// object per directory (`kiln compile DIR --compiler host`), run on the CPU by the device
// emulator over a host arena; library steps (cuDNN on a GPU) run the reference.
#pragma once

#include "runtime/cpu/backend.hpp"
#include "runtime/emu/module.hpp"

#include <memory>
#include <string>

namespace kiln {

struct EmuOptions {
  unsigned checks = KILN_EMU_CHECK_ALL; // bounds, shared-memory initialisation, races
  unsigned workers = 0;                 // OS threads running blocks; 0: hardware threads
};

class EmuBackend final : public cpu::CpuBackend {
public:
  EmuBackend(std::string library, EmuOptions options = {});
  std::string_view name() const override { return "emu"; }
  void prepare(const Plan& plan) override;
  void run(const Step& step) override;

private:
  std::string library_;
  EmuOptions options_;
  std::unique_ptr<EmuModule> module_;
};

} // namespace kiln
