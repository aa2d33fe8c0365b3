// A model's plan on a backend, as kiln run and kiln train make it: on "cpu" the reference
// ops (the lowered plan, or under a schedule: segmented fused tiling or a training recompute
// strategy, solved here), on "emu" and "gpu" the generated kernels (generated_run.hpp) with
// the schedule generate chose.
#pragma once

#include "generator/emit/generate.hpp"
#include "generator/gpu/gpu_desc.hpp"
#include "runtime/backend.hpp"
#include "runtime/plan.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace kiln {

struct DevicePlanOptions {
  std::string device = "cpu"; // cpu, emu or gpu
  GpuDesc gpu;                // what the kernels and the schedules' cost model are made for
  // The step (train, lr, recipe) and its plan: schedule, budget, tiles and slots when the
  // plan is scheduled (is_scheduled); the kernels (cudnn_only, sparse, profile, tuning_db)
  // on emu and gpu. The cpu backend runs the reference of every layer.
  GenerateOptions generate;
  bool progress = false; // the compile's progress line
};

struct DevicePlan {
  Plan plan;
  std::unique_ptr<Backend> backend;
  std::optional<ScheduleChoice> schedule; // when the plan is scheduled
};

// Whether the options schedule the plan: tiled, or a training step under a strategy other
// than store-all or a budget.
bool is_scheduled(const GenerateOptions& o);

DevicePlan make_device_plan(const Model& m, const DevicePlanOptions& o);

} // namespace kiln
