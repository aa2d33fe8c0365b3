// Walks a plan's phases over a backend: the one piece of code shared by the cpu, emu and
// cuda backends. It also enforces the plan's memory semantics as it goes: a step may read
// only persistent buffers or transient ones written and not yet freed; a transient buffer
// comes alive at its first write and dies at its free; no two live buffers overlap in the
// arena. It measures the peak of live transient bytes, the figure budgets speak of. A plan's
// `prepare` phase (derived buffers from the parameters) runs before the first other phase
// and again only after a parameter, state or the update phase has changed them.
#pragma once

#include "runtime/backend.hpp"
#include "runtime/plan.hpp"
#include "runtime/tensor.hpp"

#include <functional>
#include <map>
#include <string_view>
#include <vector>

namespace kiln {

struct ExecutorOptions {
  bool poison = true; // fill transient buffers with NaN when they come alive
  // Called before each step (progress, tracing); may be empty.
  std::function<void(const Phase&, size_t step)> on_step;
};

class Executor {
public:
  Executor(const Plan& plan, Backend& backend, ExecutorOptions options = {});

  // Writes a persistent buffer (input, target, parameter) from the host, converting the
  // element type when needed; the shape must match.
  void write(int buffer, const Tensor& t);
  void write(std::string_view buffer, const Tensor& t);
  Tensor read(int buffer);
  Tensor read(std::string_view buffer);

  // Runs the phase; "prepare" runs first when its derived buffers are stale.
  void run(std::string_view phase);

  int64_t peak_transient_bytes() const { return peak_; }
  int64_t live_transient_bytes() const { return live_; }

private:
  int lookup(std::string_view name) const;
  void make_live(int base, const std::string& where);
  void check_readable(int buffer, const std::string& where) const;

  const Plan& plan_;
  Backend& backend_;
  ExecutorOptions options_;
  std::vector<char> live_flag_;         // per base buffer (persistent: always 1)
  std::map<int64_t, int> live_ranges_;  // offset -> base buffer, for overlap checks
  int64_t live_ = 0, peak_ = 0;
  bool prepared_ = false; // the derived buffers hold what the current parameters give
};

} // namespace kiln
