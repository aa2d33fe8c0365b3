// A channels-last batchnorm in training over many blocks (DESIGN.md 5.1): its forward_train
// or backward preceded by a batchnorm.partials step that writes the sums of R chunks of rows
// into an fp32 workspace [R, 2 or 4, C], which the step then reads
// (runtime/ops/batchnorm_chunks.hpp). A one-step kernel has a block per group of 32
// channels reduce every row, so a layer of 64 channels runs on 2 blocks; chunks give it
// groups x R. Chosen per step, with R, where the cost model predicts the pair clearly faster;
// not under a memory budget (the workspaces are not in the schedule's accounting).
#pragma once

#include "generator/gpu/gpu_desc.hpp"
#include "runtime/plan.hpp"

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace kiln {

struct BatchnormChunksDecision {
  std::string node;
  int64_t chunks = 0;
  double one_step_us = 0; // the step's best estimate without chunks
  double chunked_us = 0;  // batchnorm.partials' and the chunked step's, summed
};

std::vector<BatchnormChunksDecision> plan_batchnorm_chunks(Plan& p, const GpuDesc& g);

nlohmann::ordered_json batchnorm_chunks_json(const BatchnormChunksDecision& d);

} // namespace kiln
