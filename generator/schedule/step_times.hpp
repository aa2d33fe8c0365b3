// The time of each op of a training step (forward, loss, gradient, parameter gradient,
// tiled segment), from the per-layer times of the cost model (cost/layer_times.hpp): what
// the schedules minimise.
#pragma once

#include "generator/lower/tiled_segment.hpp"
#include "generator/lower/training_graph.hpp"
#include "generator/model/profile.hpp"

#include <vector>

namespace kiln {

// A tiled segment's forward (every tile once) and backward (every tile recomputed, then
// backpropagated), from the planner's per-layer recompute factors.
struct SegmentTimes {
  double forward_us = 0, backward_us = 0, recompute_factor = 1;
};
SegmentTimes tiled_segment_times(const TiledSegment& s, const std::vector<LayerTimes>& layers);

// Time of each op of a training graph (microseconds).
std::vector<double> op_times(const TrainingGraph& g, const std::vector<LayerTimes>& layers);

} // namespace kiln
