// The cpu backend: the plan's arena in host memory, every step computed by the reference
// ops. The oracle the emu and cuda backends are checked against. The emu backend shares
// its host arena and overrides how steps run.
#pragma once

#include "runtime/backend.hpp"

#include <memory>

namespace kiln::cpu {

class CpuBackend : public Backend {
public:
  std::string_view name() const override { return "cpu"; }
  void prepare(const Plan& plan) override;
  void upload(int buffer, const Tensor& t) override;
  Tensor download(int buffer) override;
  void poison(int buffer) override;
  void run(const Step& step) override;

  std::byte* arena() { return arena_.get(); }

protected:
  const Plan& plan() const { return *plan_; }

private:
  struct Free {
    void operator()(std::byte* p) const;
  };
  const Plan* plan_ = nullptr;
  std::unique_ptr<std::byte, Free> arena_;
};

} // namespace kiln::cpu
