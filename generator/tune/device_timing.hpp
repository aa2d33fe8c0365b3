// Timing one step as DESIGN.md 9 asks: warm-up runs, then the median of many runs, each
// timed on the device's own clock (CUDA events on the cuda backend), with the step's
// buffers copied often enough that the copies together exceed the L2 cache twice over and
// the runs rotate through them — so every run reads its inputs from memory, not from the
// cache the previous run filled.
#pragma once

#include "generator/tune/sweep.hpp"
#include "runtime/backend.hpp"

namespace kiln {

struct TimingOptions {
  int warmup = 5;
  int runs = 50; // at least 20
  int64_t l2_bytes = 0;
  int64_t max_bytes = int64_t(4) << 30; // the copies' arena at most (fewer copies beyond)
};

// `copies` copies of a single-step plan's step, each on its own buffers, in one phase.
Plan rotated_plan(const Plan& single, int copies);
// How many copies the options ask for a plan of `arena_bytes`.
int rotation_copies(int64_t arena_bytes, const TimingOptions& o);

// Prepares `backend` with the rotated plan, fills its inputs with random numbers and times
// runs of every copy back to back, in one phase (a CUDA graph on the cuda backend): the
// median run over the number of copies.
DeviceTiming time_rotated(const Plan& single, Backend& backend, const TimingOptions& o);

} // namespace kiln
