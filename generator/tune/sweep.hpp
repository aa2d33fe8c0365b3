// The sweep of kiln bench and kiln tune: for every tunable step of a generated plan (conv,
// linear, pooling; one per distinct shape), every valid variant is checked against the CPU
// reference on the device and, where the device times (a GPU), timed; cuDNN's best
// algorithm is timed on the same shape beside them.
#pragma once

#include "generator/check/kernel_check.hpp"
#include "generator/gpu/gpu_desc.hpp"
#include "generator/select/select.hpp"
#include "generator/tune/key.hpp"
#include "generator/tune/shard.hpp"

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

struct WorkItem {
  TuneKey key;
  std::vector<std::string> layers; // nodes of the plan's steps with this key
  size_t phase = 0, step = 0;      // the first such step
  Variant variant;
  CostEstimate predicted;    // the cost model's, uncorrected
  bool model_choice = false; // the cost model's pick for the step
};

// Every (shape, variant) of the plan's tunable steps, sorted by (key id, variant name): the
// order shards deal from. With `all_variants` false, only the cost model's pick per shape.
std::vector<WorkItem> sweep_work(const Plan& plan, Layout layout, const GpuDesc& g,
                                 bool all_variants = true);

struct DeviceTiming {
  double median_ms = 0;
  int runs = 0;
  std::string note; // how, where not as designed (timed launch by launch: host work included)
};

// What the sweep runs on. `check` makes backends for check_step; `time` times a checked
// single-step plan (a launch, or a cuDNN library step); empty where the device cannot time
// (the emulator).
struct SweepDevice {
  std::string name; // "emu" or "gpu"
  BackendFactory check;
  std::function<DeviceTiming(const Plan& single)> time;
  int64_t check_images = CheckOptions{}.images; // CheckOptions::images
};

struct SweepRow {
  size_t item = 0; // index into the work items
  KernelCheck check;
  std::optional<DeviceTiming> timing;
  std::optional<double> cudnn_ms; // the shape's cuDNN time, on every row of the shape
  std::string cudnn_note;         // why there is none (or how it was timed), where a GPU times
  bool winner = false;            // fastest checked variant of its shape in this sweep
};

using SweepProgress = std::function<void(size_t done, size_t total, const WorkItem&)>;

// What the caller hears of a running sweep, and how it stops one.
struct SweepHooks {
  SweepProgress progress; // before each item, and once more (done == total) at the end
  // Each row as soon as it is complete: kiln tune saves it at once, so a killed sweep loses
  // at most the item it was on.
  std::function<void(const SweepRow&)> done;
  // Asked before each item: true ends the sweep there (a SIGTERM), the rows so far returned.
  std::function<bool()> stop;
  // An item left the CUDA context unusable (sticky_cuda_error): the sweep ends after its
  // row, which names the error, and this hears why.
  std::function<void(const std::string&)> context_lost;
};

// The sticky CUDA error a device failure's message names ("cudaErrorIllegalInstruction", an
// illegal address, a launch failure, ...): after one, every later call in the process fails
// with it, so the items after it would all read as failures of their own. "" where none.
std::string sticky_cuda_error(std::string_view message);

// Checks (and times) the items at `mine`, in order; cuDNN once per shape among them.
std::vector<SweepRow> run_sweep(const Plan& plan, const std::vector<WorkItem>& items,
                                const std::vector<size_t>& mine, const SweepDevice& device,
                                uint64_t seed, const SweepHooks& hooks);

} // namespace kiln
