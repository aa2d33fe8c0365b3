#include "runtime/emu/backend.hpp"

#include "runtime/cpu/reference_step.hpp"
#include "runtime/error.hpp"

#include <vector>

namespace kiln {

EmuBackend::EmuBackend(std::string library, EmuOptions options)
    : library_(std::move(library)), options_(options) {}

void EmuBackend::prepare(const Plan& plan) {
  cpu::CpuBackend::prepare(plan);
  if (!plan.kernels.empty()) module_ = std::make_unique<EmuModule>(library_);
  for (const Kernel& k : plan.kernels)
    if (!module_->has_kernel(k.entry))
      throw Error(library_, k.name, "the emulated kernel library has no such kernel (recompile with --compiler host)");
}

void EmuBackend::run(const Step& step) {
  if (step.kind != StepKind::launch) {
    cpu::run_reference_step(plan(), step, arena());
    return;
  }
  const Kernel& k = plan().kernels[step.kernel];
  std::vector<EmuBuffer> args;
  for (const std::string& role : k.args) {
    const int i = step.need(role);
    const Buffer& b = plan().buffers[i];
    args.push_back({arena() + plan().byte_offset(i), size_t(b.span_bytes()), b.name.c_str()});
  }
  EmuLaunchConfig cfg;
  for (int d = 0; d < 3; ++d) {
    cfg.grid[d] = unsigned(k.grid[d]);
    cfg.block[d] = unsigned(k.block[d]);
    cfg.cluster[d] = unsigned(k.cluster[d]);
  }
  cfg.dynamic_smem = size_t(k.dynamic_smem);
  cfg.checks = options_.checks;
  cfg.workers = options_.workers;
  module_->launch(k.entry, cfg, args);
}

} // namespace kiln
