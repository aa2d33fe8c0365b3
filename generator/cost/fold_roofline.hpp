// What folding a model by a factor should gain on a GPU before anything is trained
// (FoldedCNNs; `kiln inspect --fold`): per layer and in total, FLOPs per image (as the paper
// counts them), bytes per image (inputs, output and parameters once, parameters shared by the
// batch) and the roofline's time per image on the unit the layers run on (cost/roofline.hpp).
#pragma once

#include "generator/gpu/gpu_desc.hpp"
#include "generator/model/model.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace kiln {

struct FoldRoofline {
  struct Row {
    std::string name, op;
    double flops = 0, bytes = 0; // per image
    double us = 0;               // roofline time per image
  };
  int64_t factor = 1, batch = 0; // the batch: the model's, rounded up to whole folds
  std::vector<Row> rows;
  Row total;
};

FoldRoofline fold_roofline(const Model& m, const GpuDesc& g, int64_t factor);

} // namespace kiln
