#include "generator/schedule/step_times.hpp"

#include "generator/cost/roofline.hpp"

namespace kiln {

SegmentTimes tiled_segment_times(const TiledSegment& s, const std::vector<LayerTimes>& layers) {
  // Each layer does its work once per point it computes (halos counted again), and launches
  // once per tile.
  const sched::TileCost c = sched::tile_cost(s.problem, s.tiling);
  const double extra_launches = double(s.tiling.count() - 1) * kLaunchUs;
  SegmentTimes t;
  for (size_t j = 0; j < s.nodes.size(); ++j) {
    const double r = c.op_recompute[j];
    if (r == 0) continue;
    const LayerTimes& l = layers[size_t(s.nodes[j])];
    t.forward_us += l.forward_us * r + extra_launches;
    t.backward_us += (l.forward_us + l.backward_us) * r + 2 * extra_launches;
  }
  t.recompute_factor = c.recompute_factor;
  return t;
}

std::vector<double> op_times(const TrainingGraph& g, const std::vector<LayerTimes>& layers) {
  const Model& m = g.model();
  std::vector<double> times(g.ops().size(), 0);
  const SegmentTimes seg = g.tiled() ? tiled_segment_times(*g.tiled(), layers) : SegmentTimes{};
  for (size_t j = 0; j < g.ops().size(); ++j) {
    const TrainOp& op = g.ops()[j];
    switch (op.kind) {
    case TrainOp::forward: times[j] = layers[op.node].forward_us; break;
    case TrainOp::loss: times[j] = kLaunchUs; break;
    case TrainOp::gradient:
      // Each consumer's share of its backward that flows into this value.
      for (size_t c = 0; c < m.nodes.size(); ++c)
        for (int r : m.nodes[c].inputs)
          if (r == op.node) {
            // MAC ops split their backward between data and weight gradients.
            times[j] += m.macs(int(c)) > 0 ? layers[c].backward_us / 2 : layers[c].backward_us;
          }
      break;
    case TrainOp::tiled_forward: times[j] = seg.forward_us; break;
    case TrainOp::tiled_backward: times[j] = seg.backward_us; break;
    case TrainOp::param_grad: {
      times[j] = m.macs(op.node) > 0 ? layers[op.node].backward_us / 2 : 0;
      break;
    }
    }
  }
  return times;
}

} // namespace kiln
