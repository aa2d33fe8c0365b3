// The roofline estimate selection compares: a variant's time is its FLOPs over the peak of
// the unit it uses or its bytes over memory bandwidth, whichever is larger, scaled by the
// family's efficiency, by how well its blocks fill the GPU (occupancy and the last wave),
// plus a launch overhead.
#pragma once

#include "generator/gpu/gpu_desc.hpp"
#include "generator/gpu/occupancy.hpp"
#include "generator/select/variant.hpp"

namespace kiln {

struct CostEstimate {
  double micros = 0;  // estimated time
  double floor_micros = 0; // the roofline floor
  Occupancy occ;
  double fill = 0;    // fraction of SM block slots the grid keeps busy over its waves
};

double peak_tflops(const GpuDesc& g, const std::string& math);
CostEstimate estimate_cost(const GpuDesc& g, const Variant& v);

} // namespace kiln
