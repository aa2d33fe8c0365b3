// How long each layer takes, forward and backward: a roofline estimate from the GPU
// descriptor (FLOPs over the peak of the unit the dtype uses, bytes over bandwidth, plus a
// launch overhead), or measured times from a profile (generator/model/profile.hpp: its
// "nodes"; layers it does not name keep their estimate).
#pragma once

#include "generator/gpu/gpu_desc.hpp"
#include "generator/model/model.hpp"
#include "generator/model/profile.hpp"
#include "generator/schedule/tiled_segment.hpp"
#include "generator/schedule/training_graph.hpp"

#include <map>
#include <string>
#include <vector>

namespace kiln {


std::vector<LayerTimes> layer_times(const Model& m, const GpuDesc& g,
                                    const Profile* profile = nullptr);

// A tiled segment's forward (every tile once) and backward (every tile recomputed, then
// backpropagated), from the planner's per-layer recompute factors.
struct SegmentTimes {
  double forward_us = 0, backward_us = 0, recompute_factor = 1;
};
SegmentTimes tiled_segment_times(const TiledSegment& s, const std::vector<LayerTimes>& layers);

// Time of each op of a training graph (microseconds).
std::vector<double> op_times(const TrainingGraph& g, const std::vector<LayerTimes>& layers);

} // namespace kiln
