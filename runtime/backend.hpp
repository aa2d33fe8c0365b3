// What the executor needs from a device: an arena laid out as the plan says, transfers,
// and the computation of one step. Implemented by the cpu, emu and cuda backends.
#pragma once

#include "runtime/plan.hpp"
#include "runtime/tensor.hpp"

#include <chrono>
#include <functional>
#include <memory>
#include <string_view>

namespace kiln {

class Backend {
public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;
  // Allocates the arena (plan.arena_bytes) and loads whatever the plan's steps need.
  virtual void prepare(const Plan& plan) = 0;
  // Host <-> buffer; the tensor has the buffer's shape and dtype (the executor checks).
  virtual void upload(int buffer, const Tensor& t) = 0;
  virtual Tensor download(int buffer) = 0;
  // Fills a buffer with NaN (or an all-ones pattern for integers) so that elements a
  // step fails to write show up.
  virtual void poison(int buffer) = 0;
  // Computes one step (never a free). Between begin_phase and end_phase a backend may only
  // record the step (the cuda backend captures a phase into a CUDA graph and replays it).
  virtual void run(const Step& step) = 0;
  virtual void begin_phase(const Phase&) {}
  virtual void end_phase(const Phase&) {}
  virtual void synchronize() {}
  // Milliseconds `body` (some steps) takes on the device. By default the host's clock
  // between synchronizations; the cuda backend records events on its stream.
  virtual double time_ms(const std::function<void()>& body) {
    synchronize();
    const auto t0 = std::chrono::steady_clock::now();
    body();
    synchronize();
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  }
};

// Makes a fresh backend (a check or a timed run may want one per use).
using BackendFactory = std::function<std::unique_ptr<Backend>()>;

} // namespace kiln
