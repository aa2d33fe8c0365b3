// kiln inspect --fold F1,F2,... --gpu GPU: what folding a model by each factor should gain on
// a GPU before anything is trained (FoldedCNNs): per layer and in total, FLOPs per image (as
// the paper counts them), bytes per image (inputs, output and parameters; parameters shared
// by the batch), arithmetic intensity, and the roofline's time per image and throughput.
#pragma once

#include "generator/gpu/gpu_desc.hpp"
#include "generator/model/model.hpp"

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace kiln::cli {

// Factors from "1,2,3,4" (1: the model as it is); an error names the bad entry.
std::vector<int64_t> parse_fold_factors(const std::string& text);

// The table (or, with json, the object) for each factor at the model's batch rounded up
// to a multiple of the factor.
void print_fold_roofline(const Model& m, const GpuDesc& g, const std::vector<int64_t>& factors,
                         bool json);

} // namespace kiln::cli
